package webbotauth

// KnownAgent is a catalogue entry: a signing agent's origin and the
// robots.txt product token its requests answer to.
type KnownAgent struct {
	// Origin is the agent's identifier as Result.Agent reports it.
	Origin string
	// Token is the robots.txt product token the agent's requests are judged
	// by.
	Token string
	// Operator is the organisation running the agent.
	Operator string
	// Source is the operator's documentation the entry comes from.
	Source string
}

// knownAgents is the built-in catalogue of signing agents.
var knownAgents = []KnownAgent{
	{
		// OpenAI documents that ChatGPT agent signs every request
		// (RFC 9421) with "Signature-Agent: \"https://chatgpt.com\"" and
		// publishes its keys at
		// https://chatgpt.com/.well-known/http-message-signatures-directory:
		// https://help.openai.com/en/articles/11845367-chatgpt-agent-allowlisting
		// That page names no robots.txt token for the agent. OpenAI's
		// crawler overview documents ChatGPT-User as the agent for user
		// actions in ChatGPT (and notes robots.txt rules may not apply to
		// it): https://developers.openai.com/api/docs/bots — so signed
		// ChatGPT traffic is mapped to ChatGPT-User.
		Origin:   "https://chatgpt.com",
		Token:    "ChatGPT-User",
		Operator: "OpenAI",
		Source:   "https://help.openai.com/en/articles/11845367-chatgpt-agent-allowlisting",
	},
	{
		// Google documents (experimental) that a subset of Google-Agent
		// requests is signed and authenticated as https://agent.bot.goog:
		// https://developers.google.com/crawling/docs/crawlers-fetchers/web-bot-auth
		// Google-Agent is listed among the user-triggered fetchers, which
		// "generally ignore robots.txt rules"; Google documents no
		// robots.txt token for it, so its User-Agent product token
		// "Google-Agent" is used:
		// https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers
		Origin:   "https://agent.bot.goog",
		Token:    "Google-Agent",
		Operator: "Google",
		Source:   "https://developers.google.com/crawling/docs/crawlers-fetchers/web-bot-auth",
	},
}

// KnownAgents returns a copy of the built-in catalogue of signing agents.
// Config.Agents adds to it or overrides its tokens.
func KnownAgents() []KnownAgent {
	return append([]KnownAgent(nil), knownAgents...)
}

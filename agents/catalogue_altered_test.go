package agents

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/agents/internal/uatext"
)

// tokenNote says why a catalogue entry judges some of the User-Agents it
// identifies by a robots.txt token that they do not carry as a product.
type tokenNote struct {
	kind string // claims, words, family, gap
	why  string // what the User-Agents are, and the source checked
}

// Kinds of tokenNote.
const (
	// The User-Agent names another crawler whose rules it says it follows
	// ("treat like Googlebot", "like FeedFetcher-Google"): judged, and
	// verified, as that claim.
	noteClaims = "claims"
	// The User-Agent names the crawler in words, a host name or a form
	// that is no product token; the token is the one the operator or the
	// upstream record documents.
	noteWords = "words"
	// An upstream record (crawler-user-agents) groups other User-Agents of
	// the same operator or software under one crawler, whose token they
	// are judged by; no operator document in agents/data or
	// /work/shared/data names a token of their own.
	noteFamily = "family"
	// Known wrong: the operator documents another token, or the record
	// captures another operator's crawler. To be fixed in the catalogue.
	noteGap = "gap"
)

// alteredTokens lists every entry that judges some User-Agent it
// identifies by a token that User-Agent does not carry (see
// TestCatalogueAlteredTokens), with the reason. A new entry, or a change
// that makes an entry judge User-Agents by a token they do not carry,
// fails the test until it is listed here with its source.
var alteredTokens = map[string]tokenNote{
	"Googlebot":                     {noteClaims, "acapbot (\"treat like Googlebot\") and SentiBot (\"compatible with Googlebot\") ask for Googlebot's rules"},
	"Mediapartners-Google":          {noteClaims, "Daumoa says \"Following Mediapartners-Google\"; Google's own old form \"Mediapartners (Googlebot)\" is the curated upstream pattern"},
	"FeedFetcher-Google":            {noteClaims, "Feedly and Feedspot say \"like FeedFetcher-Google\""},
	"Yahoo! Slurp":                  {noteWords, "Yahoo! Slurp is two words; Yahoo documents Slurp (token_exception, https://help.yahoo.com/kb/SLN22600.html)"},
	"Teoma":                         {noteWords, "Ask Jeeves/Teoma carries Teoma as a version; Ask documented Teoma (token_exception)"},
	"Panscient":                     {noteWords, "panscient.com is a host name; ai.robots.txt lists the agent as Panscient"},
	"QuillBot":                      {noteWords, "quillbot.com is a host name; ai.robots.txt lists the agent as QuillBot"},
	"linkdexbot":                    {noteWords, "linkdex.com/v2.0 is a host name; the record's other User-Agents carry linkdexbot"},
	"SeekportBot":                   {noteWords, "\"Seekport Crawler\" is two words; the record's other User-Agents carry SeekportBot (https://bot.seekport.com)"},
	"AllAfrica":                     {noteWords, "\"AllAfrica NewsBot\" is two words"},
	"BestChange":                    {noteWords, "\"BestChange Bot\" is two words"},
	"Cludo":                         {noteWords, "\"cludo.com bot\" is a host name and a word"},
	"HubSpot":                       {noteWords, "\"HubSpot Crawler\", \"HubSpot Single Page link check\" are several words"},
	"semantic-visions-discovery":    {noteWords, "\"semantic-visions.com crawler\" is a host name and a word; the record's other User-Agent carries semantic-visions-discovery"},
	"PiplBot":                       {noteWords, "\"Mozilla/5.0+(compatible;+PiplBot;+...)\" writes spaces as '+', so PiplBot is no product of it"},
	"woriobot":                      {noteWords, "\"woriobot support [at] zite [dot] com\" runs the name into an address"},
	"TurnitinBot":                   {noteFamily, "Turnitin/1.1 is Turnitin's other User-Agent (http://www.turnitin.com)"},
	"TinEye-bot":                    {noteFamily, "TinEye/1.1 is TinEye's other User-Agent (http://www.tineye.com/crawler.html)"},
	"msnbot":                        {noteFamily, "msnbot-media, msnbot-NewsBlogs, msnbot-UDiscovery and librabot link http://search.msn.com/msnbot.htm; Microsoft documents only msnbot's group"},
	"YandexAdditional":              {noteFamily, "Yandex documents the token YandexAdditional for the robot whose User-Agent is YandexAdditionalBot (https://yandex.com/support/webmaster/robot-workings/check-yandex-robots.html)"},
	"DuckDuckBot":                   {noteFamily, "DuckDuckBot-Https links https://duckduckgo.com/duckduckbot, whose page documents only DuckDuckBot"},
	"Qwantbot":                      {noteFamily, "Qwantify and Qwantbot-news are Qwant's (https://help.qwant.com/bot/), which documents Qwantbot"},
	"ia_archiver":                   {noteFamily, "ia_archiver-web.archive.org is the same crawler with a host name appended"},
	"archive.org_bot":               {noteFamily, "heritrix and special_archiver link archive.org/details/archive.org_bot, which documents archive.org_bot"},
	"simplecrawler":                 {noteFamily, "SimpleCrawler/0.1 is the record's one other instance; simplecrawler obeys Node (token_shared)"},
	"ExaBot":                        {noteFamily, "\"Exabot PyExalead/3.0\" is Exalead's Exabot in another form"},
	"Spider":                        {noteFamily, "SpiderLing (a research crawler) is matched by the record's pattern"},
	"Friendly_Crawler":              {noteFamily, "NutchCVS and istellabot-nutch are Nutch builds the record groups"},
	"grub-client-0.3.0":             {noteFamily, "grub-client-<version>: the version is part of the name"},
	"heritrix":                      {noteFamily, "sukibot_heritrix is a Heritrix deployment"},
	"coccoc":                        {noteFamily, "image.coccoc and imagecoccoc are old Coc Coc image robots that Coc Coc's page (https://help.coccoc.com/en/search-engine/coccoc-robots) no longer lists; its current robots are entries of their own (coccocbot-web, coccocbot-image, ... with coccocbot)"},
	"psbot-image":                   {noteFamily, "psbot and psbot-page are Picsearch's other robots (http://www.picsearch.com/bot.html)"},
	"SemrushBot-SA":                 {noteFamily, "SemrushBot-SI and SemrushBot-BA are Semrush's other robots (http://www.semrush.com/bot.html)"},
	"PingdomPageSpeed":              {noteFamily, "pingbot, Pingdom.com_bot_version_1.4_ and PingdomTMS are Pingdom's (http://www.pingdom.com)"},
	"Hatena":                        {noteFamily, "Hatena-Favicon and HatenaBookmark are Hatena's"},
	"Baidu-YunGuanCe-Bot":           {noteFamily, "Baidu-YunGuanCe-SLABot, -ScanBot, -PerfBot, -VSBot are the same service's (https://ce.baidu.com/topic/topic20150908)"},
	"Feedly":                        {noteFamily, "FeedlyBot/1.0 is Feedly's (https://www.feedly.com/fetcher.html)"},
	"Experibot-v2":                  {noteFamily, "Experibot-v3: the version is part of the name"},
	"Curebot":                       {noteFamily, "curebot-feed-fetcher is Curebot's"},
	"UM-Bentley-Archive-It":         {noteFamily, "special_archiver; Archive-It is Archive-It's crawler (http://archive-it.org/files/site-owners-special.html)"},
	"EzoicBot-UptimeOwl":            {noteFamily, "EzoicBot-Nicheiq is Ezoic's (https://ezoic.com/bot/)"},
	"seo4ajax.com":                  {noteFamily, "s4a/1.0 links https://www.seo4ajax.com/webscraper"},
	"webspidermount":                {noteFamily, "WSM/2.0 links https://webspidermount.com/"},
	"HeadOnlyScraper":               {noteFamily, "HeadOnlyScraperV2: the version is part of the name"},
	"XY-Archive-Compliance-Crawler": {noteFamily, "XY-Archive-Compliance-Archiver is the same service's"},
	"YandexBot":                     {noteGap, "Yandex documents that each of its robots (YandexDirect, YandexMedia, YandexBlogs, YandexTurbo, ...) obeys a group naming it, else Yandex, else *, and that a YandexBot group is for the main indexing robot only (https://yandex.com/support/webmaster/en/robot-workings/user-agent); the record's pattern yandex.com/bots makes them YandexBot, judged by YandexBot's group first"},
	"Alexabot":                      {noteGap, "the record's pattern exabot also matches Exalead's Exabot-Images, which is not Alexa's"},
}

// TestCatalogueAlteredTokens: every entry that judges some User-Agent it
// identifies by a robots.txt token that the User-Agent does not carry as
// a whole product name (hasProductToken) is listed in alteredTokens with
// why, and every listed entry still does.
func TestCatalogueAlteredTokens(t *testing.T) {
	f := readCatalogueFile(t)
	samples := catalogueSamples(t, f)
	altered := map[string][]string{}
	tokens := map[string]string{}
	for _, e := range f.Entries {
		tokens[e.Name] = strings.Join(e.Tokens, ", ")
		if len(e.Tokens) == 0 || e.RobotsOnly {
			continue
		}
		for _, s := range samples[e.Name] {
			if a := identify(s); a.Name != e.Name {
				continue // a sample another entry claims
			}
			if !hasProductToken(s, e.Tokens[0]) && !slices.Contains(altered[e.Name], s) {
				altered[e.Name] = append(altered[e.Name], s)
			}
		}
	}
	names := make([]string, 0, len(altered))
	for n := range altered {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		note, ok := alteredTokens[n]
		if !ok {
			t.Errorf("%q judges %d User-Agents by %q, a token they do not carry (e.g. %q): fix the catalogue, or list it in alteredTokens with the operator's documentation",
				n, len(altered[n]), tokens[n], altered[n][0])
			continue
		}
		if note.why == "" || !slices.Contains([]string{noteClaims, noteWords, noteFamily, noteGap}, note.kind) {
			t.Errorf("%q: note %+v", n, note)
		}
		t.Logf("%-8s %s (%d User-Agents, e.g. %q): %s", note.kind, n, len(altered[n]), uatext.NameOf(altered[n][0]), note.why)
	}
	for n := range alteredTokens {
		if _, ok := altered[n]; !ok {
			t.Errorf("alteredTokens lists %q, whose User-Agents all carry its token now: remove it", n)
		}
	}
	// Coc Coc's robots are judged by their own documented tokens, then
	// coccocbot, the name Coc Coc gives all of them.
	for ua, want := range map[string][]string{
		"Mozilla/5.0 (compatible; coccocbot-web/1.0; +http://help.coccoc.com/searchengine)":   {"coccocbot-web", "coccocbot"},
		"coccocbot-web/1.0 (+http://help.coccoc.com/searchengine)":                            {"coccocbot-web", "coccocbot"},
		"Mozilla/5.0 (compatible; coccocbot-image/1.0; +http://help.coccoc.com/searchengine)": {"coccocbot-image", "coccocbot"},
		"Mozilla/5.0 (compatible; coccocbot/1.0; +http://help.coccoc.com/searchengine)":       {"coccocbot"},
	} {
		if a := Identify(ua); !a.Known || !slices.Equal(a.Tokens, want) {
			t.Errorf("Identify(%q) = %q %q, want tokens %q", ua, a.Name, a.Tokens, want)
		}
	}
}

#!/bin/sh
# Records the ClientHello of every program of the corpus that is installed
# here, one at a time, into DIR (default: agents/ja4/testdata/clienthellos),
# with the recorder beside this script. Run from the repository's root:
#
#	sh agents/ja4/internal/record/record-all.sh [DIR]
#
# Each program is pointed at https://localhost:PORT/, where the recorder
# reads its first TLS record and closes the connection; a program that is
# not installed is skipped and named. The versions recorded are those of
# the machine: say them in DIR/README.md when a file changes.
set -u
dir=${1:-agents/ja4/testdata/clienthellos}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/record" ./agents/ja4/internal/record || exit 1

# Java's HttpClient with a trust-all SSLContext (no certificate is ever
# shown: the recorder closes the connection after the hello).
cat >"$bin/Get.java" <<'EOF'
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class Get {
    public static void main(String[] args) throws Exception {
        TrustManager[] all = {new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] c, String a) {}
            public void checkServerTrusted(X509Certificate[] c, String a) {}
            public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
        }};
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, all, null);
        HttpClient c = HttpClient.newBuilder().sslContext(ctx).build();
        try {
            c.send(HttpRequest.newBuilder(URI.create(args[0])).build(), HttpResponse.BodyHandlers.discarding());
        } catch (Exception e) {
            // the recorder never answers
        }
    }
}
EOF

# record NAME PROGRAM COMMAND...: COMMAND may use $URL and $PORT.
record() {
	name=$1 program=$2
	shift 2
	if ! command -v "$program" >/dev/null 2>&1; then
		echo "$name: $program not installed, skipped"
		return
	fi
	rm -f "$bin/port"
	"$bin/record" -wait 90s -o "$dir/$name.hex" >"$bin/port.new" 2>"$bin/log" &
	rec=$!
	# The recorder prints its port once it listens.
	while [ ! -s "$bin/port.new" ]; do sleep 0.1; done
	mv "$bin/port.new" "$bin/port"
	PORT=$(cat "$bin/port") URL="https://localhost:$(cat "$bin/port")/"
	export PORT URL
	timeout 60 sh -c "$*" >/dev/null 2>&1 &
	client=$!
	wait "$rec"
	kill "$client" 2>/dev/null
	wait "$client" 2>/dev/null
	printf '%s: ' "$name"
	tail -n 1 "$bin/log"
}

profile() { mktemp -d; }

record curl curl 'curl -sk "$URL"'
record wget wget 'wget --no-check-certificate -q -O /dev/null --tries=1 "$URL"'
record wget2 wget2 'wget2 --no-check-certificate -q -O /dev/null --tries=1 "$URL"'
record python-urllib python3 'python3 -c "import ssl, sys, urllib.request; urllib.request.urlopen(sys.argv[1], context=ssl._create_unverified_context())" "$URL"'
record python-requests python3 'python3 -c "import sys, requests; requests.get(sys.argv[1], verify=False)" "$URL"'
record scrapy scrapy 'cd "$(mktemp -d)" && scrapy fetch --nolog "$URL"'
record node-fetch node 'NODE_TLS_REJECT_UNAUTHORIZED=0 node -e "fetch(process.argv[1]).catch(() => {})" "$URL"'
record node-https node 'NODE_TLS_REJECT_UNAUTHORIZED=0 node -e "require(\"https\").get(process.argv[1], () => {}).on(\"error\", () => {})" "$URL"'
record java-httpclient java "java $bin/Get.java \"\$URL\""
record lynx lynx 'lynx -dump "$URL"'
record openssl-s-client openssl 'openssl s_client -connect "localhost:$PORT" -servername localhost </dev/null'
record chromium-headless chromium "chromium --headless --no-sandbox --disable-gpu --ignore-certificate-errors --user-data-dir=$(profile) --dump-dom \"\$URL\""
record chromium-headed xvfb-run "xvfb-run -a chromium --no-sandbox --disable-gpu --ignore-certificate-errors --user-data-dir=$(profile) --no-first-run \"\$URL\""
record firefox-esr-headless firefox-esr "firefox-esr --headless --no-remote --profile $(profile) --screenshot $bin/ff.png \"\$URL\""
record firefox-esr-headed xvfb-run "xvfb-run -a firefox-esr --no-remote --profile $(profile) \"\$URL\""
# Go's net/http with crypto/tls's defaults.
cat >"$bin/get.go" <<'EOF'
package main

import (
	"crypto/tls"
	"net/http"
	"os"
)

func main() {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	_, _ = (&http.Client{Transport: tr}).Get(os.Args[1])
}
EOF
record go-nethttp go "go run $bin/get.go \"\$URL\""

vcl 4.1;
# Varnish 7 (Debian's `varnish`) in front of nginx in front of musicd:
#
#     clients -> Varnish (:80) -> nginx (127.0.0.1:8080) -> musicd (127.0.0.1:23001) -> MongoDB
#
# Install: copy to /etc/varnish/musicd.vcl, and beside it, under their own names, the files of
# its opt-in blocks (varnish-musicd-request-limit.vcl, varnish-musicd-url-signing.vcl,
# varnish-musicd-cors.vcl: below), and start varnishd with -f /etc/varnish/musicd.vcl (Debian:
# `systemctl edit varnish` and repeat ExecStart with your -a, -f and -s), e.g.
#
#     varnishd -a :80 -f /etc/varnish/musicd.vcl -s malloc,1g
#
# Check it compiles with `varnishd -C -f /etc/varnish/musicd.vcl`.
#
# What to adapt (each place is marked "ADAPT"):
#   - the backend address: where nginx listens (`listen` in config/nginx-musicd.conf);
#   - the probe interval and window (how fast an outage is noticed);
#   - grace (how long an outage of nginx, musicd or the database stays invisible);
#   - MAX_CACHED_BYTES in vcl_backend_response, the size of the largest track kept in memory:
#     keep it a small fraction of -s malloc,SIZE so that one album does not evict the library;
#   - the opt-in blocks: each is one include line below to uncomment, and a file of its own
#     with its own ADAPT marks (the request limit per client, signed URLs, CORS origins).
#
# Ranges, on a hit and on a miss (players seek with Range; browsers' <audio> always sends one):
#   - hit: Varnish cuts the range from the cached object itself (206 with Content-Range, 416 for
#     an unsatisfiable range); nginx and musicd are not asked.
#   - miss: Varnish never forwards Range (nor If-None-Match / If-Modified-Since) for an object it
#     may cache: it fetches the whole track from the start (vcl_backend_fetch below says so
#     explicitly), stores it, and answers the client's range from the object while it streams in.
#     musicd sends Content-Length, so the 206 goes out at once; a client asking for bytes near
#     the end waits until the fetch has reached them. A 206 from the backend is therefore never
#     stored under the plain URL (vcl_backend_response refuses it anyway).
#   - pass (objects over MAX_CACHED_BYTES, and anything uncacheable): the Range header goes to
#     nginx and musicd, which answer 206 themselves; Varnish relays it and stores nothing.
#
# Per-client limits (docs/signed-urls-and-limits.md): Varnish faces the clients here, and neither
# nginx nor musicd may pace its fill of a track (every listener shares it), so a fill goes as
# Varnish's own request (vcl_backend_fetch) and musicd, with Varnish's address among its
# --trusted-proxy, neither paces nor caps it. Hits are sent at Varnish's speed: Varnish has no
# pacing of its own, so --limit-rate does not reach clients of this stack. What Varnish can
# limit is requests per client: the opt-in request limit below (vsthrottle).

import std;

# -- The request target, a path before any rule reads it -----------------------------------------
# Every rule here reads req.url as a path ("^/musicdb/"), as musicd reads its target. But a client
# may send the target in absolute form, "GET https://music.example.org/musicdb/<id>/a.mp3": RFC
# 9112 section 3.2.2 says a server must accept it, and musicd and nginx serve it as its path
# (nginx whatever the scheme: "ftp://host/musicdb/..." too). Varnish itself turns only "http://"
# into a path ("https://" only with -p feature=+https_scheme, off by default), so without this
# sub an "https://" or "ftp://" target skipped every rule matching "^/musicdb/" (the token check,
# the request limit) and still got the track from nginx or musicd. So, first of all, before the
# opt-in blocks below:
#   - an http or https target, the scheme in any case, becomes its path and query, and its
#     authority the Host field (the target's authority wins over a Host field that disagrees, RFC
#     9112 section 3.2.2); one without a host, or with userinfo (RFC 9110 section 4.2.4), is
#     refused (400), as musicd and nginx refuse it;
#   - any other target that is not a path (another scheme, an authority, "*" but for OPTIONS) is
#     refused (400): musicd answers paths only, and this Varnish is no proxy for other sites.
# Every rule after this reads the target as the origin will. Other spellings of a path
# ("//musicdb/...", "/./musicdb/...", "/%6Dusicdb/...") name no track to musicd, which reads the
# path as sent (no decoding, no merged slashes, no dot segments: 404), so no rule needs them.
sub vcl_recv {
    if (req.url ~ "^(?i)https?://") {
        if (req.url !~ "^(?i)https?://[^/?#@]+([/?#]|$)") {
            return (synth(400, "Bad Request"));
        }
        set req.http.Host = regsub(req.url, "^(?i)https?://([^/?#]+).*$", "\1");
        set req.url = regsub(req.url, "^(?i)https?://[^/?#]+", "");
        if (req.url !~ "^/") {
            set req.url = "/" + req.url;
        }
    }
    if (req.url !~ "^/" && !(req.method == "OPTIONS" && req.url == "*")) {
        return (synth(400, "Bad Request"));
    }
}

# -- Opt-in blocks: one file each, beside this one; off as shipped ------------------------------
# Each is switched on by uncommenting its one include line (docs/deployment.md, "Opt-in blocks
# of the VCLs"); each file says what it does, what it needs and what to ADAPT in it. An include
# "./name" is read from this file's own directory (whatever vcl_path says): copy the files next
# to it, under these names.
# They come right after the sub above, so their rules read the target as a path, and in this
# order, so a request refused for its rate costs no token check.
#
# Requests per client (vsthrottle, Debian's varnish-modules): 429 beyond 300 tracks in 60 s.
#include "./varnish-musicd-request-limit.vcl";
#
# Signed URLs (musicd --url-signing-key-file) checked here too (Debian's varnish-vmod-digest and
# varnish-modules; the key file /etc/varnish/musicd-url-signing.keys).
#include "./varnish-musicd-url-signing.vcl";
#
# CORS: musicd's --cors-origin list, so that made-up Origin values make no variants.
#include "./varnish-musicd-cors.vcl";

# musicd's GET /healthz answers 200 only when a real lookup reaches the database within its
# --lookup-timeout, so the backend turns sick when nginx, musicd or the database is down.
# Probes must close the connection: Varnish reads the answer until the connection closes.
probe musicd_healthz {
    .request =
        "GET /healthz HTTP/1.1"
        "Host: localhost"
        "User-Agent: varnish-probe"
        "Connection: close";
    .expected_response = 200;
    # ADAPT: with window 5 and threshold 3, the backend turns sick ~3 intervals after an outage
    # starts and healthy again ~3 intervals after it ends.
    .interval = 1s;
    .timeout = 1s;
    .window = 5;
    .threshold = 3;
}

backend nginx {
    # ADAPT: nginx's `listen` address in config/nginx-musicd.conf (or -offload.conf).
    .host = "127.0.0.1";
    .port = "8080";
    .probe = musicd_healthz;
    .connect_timeout = 2s;
    # Above musicd's --lookup-timeout (2 s by default), after which musicd answers 503 itself.
    .first_byte_timeout = 15s;
    .between_bytes_timeout = 30s;
}

sub vcl_recv {
    if (req.url == "/healthz") {
        # Always the origin's current state, never a cached one.
        return (pass);
    }
    if (req.url ~ "^[^?#]*\?([^#]*&)?__token__(=|&|#|$)") {
        # A token still in the URL (the url-signing file is not included, or it took the token
        # out of track URLs only): passed, never cached, so musicd checks it.
        return (pass);
    }
    if (req.url ~ "^/musicdb/" &&
        ((req.http.If-Match && req.http.If-Match !~ {"^(\*|"[^"]*")$"}) ||
         (req.http.If-Unmodified-Since && !req.http.If-Match))) {
        # Preconditions Varnish does not evaluate: on a miss it drops If-Match and
        # If-Unmodified-Since from the fetch of the whole track, and on a hit it ignores them,
        # so a client musicd would answer 412 would get 200 or 206. An If-Match of one strong
        # ETag (or *), which VLC sends with every seek, is evaluated from the cache in
        # vcl_deliver below; other forms (lists, weak tags) and If-Unmodified-Since are passed
        # and musicd evaluates them (RFC 9110 section 13), as for a client that reaches it
        # directly (they are rare: editors, sync tools). If-Range stays cached too: Varnish
        # compares it with the cached ETag or Last-Modified itself (strongly, as musicd)
        # before it serves a range.
        return (pass);
    }
    if (req.url ~ "^/musicdb/") {
        # Tracks do not depend on cookies (musicd ignores them); without this a browser with
        # any cookie for the site would bypass the cache (the built-in VCL passes on Cookie).
        unset req.http.Cookie;
        # While the origin is healthy, serve an expired track at most 10 s past its TTL (while
        # it is refreshed in the background); when the probe says sick, the object's full grace
        # (1 h, set in vcl_backend_response) applies, so a short outage is not noticed.
        if (std.healthy(req.backend_hint)) {
            set req.grace = 10s;
        }
        # CORS (musicd --cors-origin with a list): one variant per Origin value; the opt-in
        # varnish-musicd-cors.vcl (above) drops Origin values musicd does not list.
    }
    # Everything else: the built-in rules (GET and HEAD looked up, other methods passed, ...):
    # CORS preflights (OPTIONS) are passed to musicd, never looked up or stored as a track.
}

sub vcl_hash {
    if (req.url ~ "^/musicdb/") {
        # A track is the same whatever Host the client used (name, IP, port): one object per URL.
        hash_data(req.url);
        return (lookup);
    }
}

sub vcl_backend_fetch {
    if (!bereq.uncacheable) {
        # A cacheable miss fetches the whole object; Varnish serves the client's range from it
        # (Varnish already drops Range on a miss; said here so nobody "fixes" it).
        unset bereq.http.Range;
        unset bereq.http.If-Range;
        # A fill is Varnish's own request, for every listener to come, not the one client's
        # that missed: without that client's X-Forwarded-For, nginx names Varnish as the
        # client, and musicd (--trusted-proxy with Varnish's address) neither paces nor caps
        # it, nor hands nginx a rate for it.
        unset bereq.http.X-Forwarded-For;
    }
}

sub vcl_backend_response {
    if (bereq.uncacheable) {
        # pass: relay whatever came (206 included), store nothing.
        return (deliver);
    }
    if (beresp.status >= 500 && bereq.is_bgfetch) {
        # A background refresh of an expired track failed (musicd or its database is down):
        # keep the stale copy and go on serving it within grace.
        return (abandon);
    }
    if (beresp.status == 206) {
        # Never store a partial answer under the plain URL.
        set beresp.uncacheable = true;
        set beresp.ttl = 0s;
        set beresp.grace = 0s;
        return (deliver);
    }
    if (beresp.status >= 400) {
        # Errors are never kept long: musicd marks them no-store (--error-cache-control), and so
        # do nginx's own 502/504 in the shipped site; anything else at most 10 s, no grace.
        if (!beresp.http.Cache-Control ||
            beresp.http.Cache-Control ~ "(?i)(no-store|no-cache|private)") {
            set beresp.uncacheable = true;
            set beresp.ttl = 0s;
            set beresp.grace = 0s;
            return (deliver);
        }
        if (beresp.ttl > 10s) {
            set beresp.ttl = 10s;
        }
        set beresp.grace = 0s;
        return (deliver);
    }
    if (bereq.url ~ "^/musicdb/") {
        # ADAPT: MAX_CACHED_BYTES = 67108864 (64 MiB). Larger tracks (long FLAC files, DJ
        # mixes) are passed for the next 10 minutes: each request, ranges included, goes to
        # nginx/musicd, which send it with sendfile without touching Varnish's memory.
        if (std.integer(beresp.http.Content-Length, 0) > 67108864) {
            return (pass(10m));
        }
        # Deliver while fetching: a listener starts playing after the first bytes, not after
        # the whole track reached Varnish.
        set beresp.do_stream = true;
        # TTL comes from musicd's Cache-Control (max-age=86400 by default).
        # ADAPT: how long an expired track may still be served when the origin is sick.
        set beresp.grace = 1h;
        # Expired objects are kept a little longer still so that the refresh is a conditional
        # request (If-None-Match with musicd's ETag) answered 304 without a body.
        set beresp.keep = 1h;
        unset beresp.http.Set-Cookie;
    }
    # The built-in rules follow: no-store / private / no-cache, Set-Cookie and Vary: * are not
    # cached (e.g. musicd run with --cache-control no-store).
}

sub vcl_deliver {
    # If-Match of one strong ETag (with *, the only forms vcl_recv lets through to the cache;
    # the others were musicd's to answer, and were): strong comparison with the track's ETag, before any range (RFC 9110 section 13.2.2), so a
    # client whose copy changed gets musicd's answer, 412, and not bytes of another version.
    if (req.url ~ "^/musicdb/" && req.http.If-Match ~ {"^"[^"]*"$"} &&
        (resp.status == 200 || resp.status == 206 || resp.status == 416) &&
        req.http.If-Match != resp.http.ETag) {
        return (synth(412, "Precondition Failed"));
    }
    # For humans and tests: was this answered from the cache? (Age and the two transaction ids
    # in X-Varnish say the same.)
    if (obj.hits > 0) {
        set resp.http.X-Cache = "hit";
    } else {
        set resp.http.X-Cache = "miss";
    }
}

sub vcl_synth {
    if (resp.status == 400 || resp.status == 412) {
        # As musicd answers them: a short plain text, never stored.
        set resp.http.Content-Type = "text/plain; charset=utf-8";
        set resp.http.Cache-Control = "no-store";
        set resp.body = "" + resp.status + " " + resp.reason + {"
"};
        return (deliver);
    }
}

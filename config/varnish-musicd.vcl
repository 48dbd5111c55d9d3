vcl 4.1;
# Varnish 7 (Debian's `varnish`) in front of nginx in front of musicd:
#
#     clients -> Varnish (:80) -> nginx (127.0.0.1:8080) -> musicd (127.0.0.1:23001) -> MongoDB
#
# Install: copy to /etc/varnish/musicd.vcl and start varnishd with -f /etc/varnish/musicd.vcl
# (Debian: `systemctl edit varnish` and repeat ExecStart with your -a, -f and -s), e.g.
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
#   - the request limit per client (opt-in, commented out: the request-limit block below).
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
# Per-client limits (README, "Per-client limits"): Varnish faces the clients here, and neither
# nginx nor musicd may pace its fill of a track (every listener shares it), so a fill goes as
# Varnish's own request (vcl_backend_fetch) and musicd, with Varnish's address among its
# --trusted-proxy, neither paces nor caps it. Hits are sent at Varnish's speed: Varnish has no
# pacing of its own, so --limit-rate does not reach clients of this stack. What Varnish can
# limit is requests per client: the opt-in request-limit block below (vsthrottle).

import std;

# -- Requests per client (vsthrottle, Debian's varnish-modules): off as shipped ---------------
# Varnish faces the clients, so it is the layer that can limit what each one asks for. Turned
# on, a client address that asks for more than 300 tracks (or ranges of them) in 60 s is
# answered 429 (text, Cache-Control: no-store, Retry-After) for the next 60 s; a player's seeks
# and a page of <audio> elements stay far below that, a scraper walking the catalogue does not.
# It runs before everything else in vcl_recv (VCL runs the subs of one name in file order), so
# a refused request costs no lookup. ADAPT: 300 and 60s (vsthrottle's limit, period and block)
# and the Retry-After (the block's seconds). Behind a TLS terminator, give Varnish the client's
# address (PROXY protocol) so that client.identity is the client's.
#
# To turn it on: remove the first '#' of each line from BEGIN request-limit to END
# request-limit (and install varnish-modules).
# BEGIN request-limit
#import vsthrottle;
#
#sub vcl_recv {
#    if (req.url ~ "^/musicdb/" &&
#        vsthrottle.is_denied("musicdb:" + client.identity, 300, 60s, 60s)) {
#        return (synth(429, "Too Many Requests"));
#    }
#}
#
#sub vcl_synth {
#    if (resp.status == 429) {
#        set resp.http.Content-Type = "text/plain; charset=utf-8";
#        set resp.http.Cache-Control = "no-store";
#        set resp.http.Retry-After = "60";
#        set resp.body = "429 Too Many Requests" + {"
#"};
#        return (deliver);
#    }
#}
# END request-limit

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
    if (req.url ~ "^/musicdb/" &&
        (req.http.If-Match || req.http.If-Unmodified-Since || req.http.If-Range)) {
        # Preconditions Varnish would not evaluate: on a miss it drops If-Match and
        # If-Unmodified-Since from the fetch of the whole track, and on a hit it ignores them
        # and If-Range, so a client musicd would answer 412 (or the whole file, for an If-Range
        # that does not match) would get 200 or 206. Passed, musicd evaluates them (RFC 9110
        # section 13), as for a client that reaches it directly; such requests are rare
        # (resumed downloads, editors), and a player's plain GET and Range stay cached.
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
        # CORS (musicd --cors-origin): with a list of origins musicd answers Vary: Origin, and
        # Varnish keeps one variant of a track per Origin value, each with its own
        # Access-Control-Allow-Origin. ADAPT: list musicd's origins here (uncomment) so that
        # made-up Origin values cannot make Varnish fetch and store a track once each; any other
        # Origin gets no Access-Control-Allow-Origin from musicd anyway. Not needed with
        # --cors-origin '*' (no Vary) or without CORS.
        #if (req.http.Origin && req.http.Origin !~ "^(https://player\.example\.com)$") {
        #    unset req.http.Origin;
        #}
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
    # For humans and tests: was this answered from the cache? (Age and the two transaction ids
    # in X-Varnish say the same.)
    if (obj.hits > 0) {
        set resp.http.X-Cache = "hit";
    } else {
        set resp.http.X-Cache = "miss";
    }
}

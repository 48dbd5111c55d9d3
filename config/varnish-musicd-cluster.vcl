vcl 4.1;
# Varnish 7 in front of several musicd origins, without nginx: the shard director (vmod
# directors, consistent hashing) gives each track to one origin, and each origin is probed on
# its own /healthz.
#
#     clients -> Varnish (:80) -> musicd on 3 hosts (10.0.0.11-13:23001) -> MongoDB
#
# Everything config/varnish-musicd.vcl says holds here (read it first: ranges on hits and
# misses, grace, the size cap, cookies, 206 never stored); this file differs in the backends
# and in what happens when an origin fails. Install and check it the same way, with the same
# opt-in files beside it (`varnishd -C -f /etc/varnish/musicd-cluster.vcl`). For nginx
# spreading the tracks instead (behind config/varnish-musicd.vcl, or facing clients), see
# config/nginx-musicd-cluster.conf.
#
# The origins are stateless: each runs musicd against the same database and the same library. With a
# copy of the library on each host, run every origin with the same --etag-field (docs/deployment.md,
# "Many origins"): Varnish revalidates an expired track with If-None-Match, and a client resumes
# with If-Range, on whichever origin the ring gives at the time.
#
# What to adapt (each place is marked "ADAPT"):
#   - the backends origin1..3 (one per musicd --listen address) and the add_backend lines;
#   - the probe interval and window (how fast a dead origin is skipped and taken back);
#   - grace and MAX_CACHED_BYTES, as in config/varnish-musicd.vcl;
#   - the opt-in blocks, the same files as config/varnish-musicd.vcl's (one include line each).
#
# Failover: a dead origin's tracks go to the next origin on the ring. Before the probe has
# noticed (3 intervals), a fetch that cannot connect, or that gets musicd's 503, is retried on
# the next origin (vcl_backend_error, vcl_backend_response; 2 retries at most). A stream
# already under way when its origin dies is cut; the player's Range request to resume it goes
# to the next origin. When the origin is back and its probe healthy again, its tracks return
# to it.

import std;
import directors;

# -- The request target, a path before any rule reads it -----------------------------------------
# As in config/varnish-musicd.vcl (which says why): an http or https target in absolute form, the
# scheme in any case, becomes its path (its authority the Host field), and any other target that
# is not a path is refused (400), before any rule reads req.url. musicd serves an "https://"
# target as its path, which would otherwise skip every rule matching "^/musicdb/".
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

# Each origin's GET /healthz answers 200 only when a real lookup reaches the database within
# its --lookup-timeout, so an origin turns sick when musicd or its path to the database is down.
probe musicd_healthz {
    .request =
        "GET /healthz HTTP/1.1"
        "Host: localhost"
        "User-Agent: varnish-probe"
        "Connection: close";
    .expected_response = 200;
    # ADAPT: with window 5 and threshold 3, an origin turns sick ~3 intervals after it dies and
    # healthy again ~3 intervals after it is back.
    .interval = 1s;
    .timeout = 1s;
    .window = 5;
    .threshold = 3;
}

# ADAPT: one backend per origin (musicd's --listen address), each probed.
backend origin1 {
    .host = "10.0.0.11";
    .port = "23001";
    .probe = musicd_healthz;
    .connect_timeout = 2s;
    # Above musicd's --lookup-timeout (2 s by default), after which musicd answers 503 itself.
    .first_byte_timeout = 15s;
    .between_bytes_timeout = 30s;
}

backend origin2 {
    .host = "10.0.0.12";
    .port = "23001";
    .probe = musicd_healthz;
    .connect_timeout = 2s;
    .first_byte_timeout = 15s;
    .between_bytes_timeout = 30s;
}

backend origin3 {
    .host = "10.0.0.13";
    .port = "23001";
    .probe = musicd_healthz;
    .connect_timeout = 2s;
    .first_byte_timeout = 15s;
    .between_bytes_timeout = 30s;
}

sub vcl_init {
    new origins = directors.shard();
    # ADAPT: every backend above. The ring is built from the backends' names: keep the names
    # when addresses change, and a track stays on its origin.
    origins.add_backend(origin1);
    origins.add_backend(origin2);
    origins.add_backend(origin3);
    origins.reconfigure();
}

sub vcl_recv {
    # The director itself (resolved per fetch, in vcl_backend_fetch): std.healthy() of it is
    # true while any origin is healthy.
    set req.backend_hint = origins.backend(resolve=LAZY);
    if (req.url == "/healthz") {
        # Always an origin's current state (the URL's origin on the ring), never a cached one.
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
        # While some origin is healthy, serve an expired track at most 10 s past its TTL (while
        # it is refreshed in the background); when the probe says sick, the object's full grace
        # (1 h, set in vcl_backend_response) applies, so a short outage is not noticed.
        if (std.healthy(req.backend_hint)) {
            set req.grace = 10s;
        }
    }
    # Everything else: the built-in rules (GET and HEAD looked up, other methods passed, ...).
}

sub vcl_hash {
    if (req.url ~ "^/musicdb/") {
        # A track is the same whatever Host the client used (name, IP, port): one object per URL.
        hash_data(req.url);
        return (lookup);
    }
}

sub vcl_backend_fetch {
    # The URL's origin on the ring, skipping sick ones; a retry (bereq.retries 1, 2) takes the
    # next healthy origin after the one that failed.
    # Keyed by the URL without a signed-URL token (the url-signing file), so every listener's
    # token reaches the track's one origin.
    set bereq.backend = origins.backend(by=KEY,
        key=origins.key(regsub(bereq.url, "[?&]__token__=[^&#]*", "")), alt=bereq.retries,
        healthy=ALL);
    if (!bereq.uncacheable) {
        # A cacheable miss fetches the whole object; Varnish serves the client's range from it
        # (Varnish already drops Range on a miss; said here so nobody "fixes" it).
        unset bereq.http.Range;
        unset bereq.http.If-Range;
        # A fill is Varnish's own request, not the missing client's (config/varnish-musicd.vcl
        # says why): musicd, with Varnish's address as --trusted-proxy, neither paces nor caps it.
        unset bereq.http.X-Forwarded-For;
    }
}

sub vcl_backend_error {
    # No connection, a reset, or a timeout before the head: the next origin, if one is left.
    if (bereq.retries < 2) {
        return (retry);
    }
}

sub vcl_backend_response {
    # musicd's 503 (its database unavailable, too many lookups in flight, or no disk thread
    # for the track's storage within --disk-queue-timeout: an origin on other disks has room,
    # one on the same NAS answers 503 as well): ask the next origin, as nginx's
    # proxy_next_upstream http_503 does, at most 2 retries in all.
    if (beresp.status == 503 && bereq.retries < 2) {
        return (retry);
    }
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
        # Errors are never kept long: musicd marks them no-store (--error-cache-control);
        # anything else at most 10 s, no grace.
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
        # musicd, which sends it with sendfile without touching Varnish's memory.
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
    # Behind a --trusted-proxy, musicd hands its --limit-rate on for nginx (X-Accel-Limit-Rate
    # and kin); Varnish cannot pace, and they are nobody else's business.
    unset resp.http.X-Accel-Limit-Rate;
    unset resp.http.X-Accel-Limit-Rate-After;
    unset resp.http.X-Accel-Buffering;
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

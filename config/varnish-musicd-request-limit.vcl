vcl 4.1;
# Opt-in for config/varnish-musicd.vcl and config/varnish-musicd-cluster.vcl: requests per client
# (vsthrottle, from Debian's varnish-modules). Off as shipped; to turn it on, install
# varnish-modules, put this file beside the VCL (same name) and uncomment the VCL's line
#
#     #include "./varnish-musicd-request-limit.vcl";
#
# Varnish faces the clients, so it is the layer that can limit what each one asks for. Turned
# on, a client address that asks for more than 300 tracks (or ranges of them) in 60 s is
# answered 429 (text, Cache-Control: no-store, Retry-After) for the next 60 s; a player's seeks
# and a page of <audio> elements stay far below that, a scraper walking the catalogue does not.
# The VCL includes it right after it made the target a path, so this vcl_recv runs before any
# other rule (VCL runs the subs of one name in the order they come), every spelling of a track's
# target counts, and a refused request costs no lookup. ADAPT: 300 and 60s (vsthrottle's limit,
# period and block) and the Retry-After (the block's seconds). Behind a TLS terminator, give
# Varnish the client's address (PROXY protocol) so that client.identity is the client's.

import vsthrottle;

sub vcl_recv {
    if (req.url ~ "^/musicdb/" &&
        vsthrottle.is_denied("musicdb:" + client.identity, 300, 60s, 60s)) {
        return (synth(429, "Too Many Requests"));
    }
}

sub vcl_synth {
    if (resp.status == 429) {
        set resp.http.Content-Type = "text/plain; charset=utf-8";
        set resp.http.Cache-Control = "no-store";
        set resp.http.Retry-After = "60";
        set resp.body = "429 Too Many Requests" + {"
"};
        return (deliver);
    }
}

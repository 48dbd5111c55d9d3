vcl 4.1;
# Opt-in for config/varnish-musicd.vcl and config/varnish-musicd-cluster.vcl: the CORS origins
# musicd answers (musicd --cors-origin with a list of origins). Off as shipped; to turn it on, list
# musicd's origins below (ADAPT), put this file beside the VCL (same name) and uncomment the VCL's
# line
#
#     #include "./varnish-musicd-cors.vcl";
#
# With a list of origins musicd answers Vary: Origin, and Varnish keeps one variant of a track
# per Origin value, each with its own Access-Control-Allow-Origin: made-up Origin values would
# make Varnish fetch and store a track once each. Any Origin not in the list is dropped before
# the lookup (musicd gives it no Access-Control-Allow-Origin anyway), so every such request
# shares the one variant without. Not needed with --cors-origin '*' (no Vary) or without CORS.

sub vcl_recv {
    # ADAPT: musicd's --cors-origin list, as one anchored alternation.
    if (req.url ~ "^/musicdb/" && req.http.Origin &&
        req.http.Origin !~ "^(https://player\.example\.com)$") {
        unset req.http.Origin;
    }
}

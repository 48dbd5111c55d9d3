vcl 4.1;
# Opt-in for config/varnish-musicd.vcl and config/varnish-musicd-cluster.vcl: signed URLs (musicd
# --url-signing-key-file), checked by Varnish too. Off as shipped; to turn it on, install
# varnish-vmod-digest and varnish-modules, write the key file (below), put this file beside the
# VCL (same name) and uncomment the VCL's line
#
#     #include "./varnish-musicd-url-signing.vcl";
#
# musicd needs nothing for it: with the same keys (--url-signing-key-file) it checks each token
# once more on a miss, without keys it leaves the check to Varnish.
#
# With it off, a URL holding a token (?__token__=...) is passed to musicd and never cached (the
# VCL's vcl_recv): musicd checks each one, and no copy is kept under a URL that someone could replay
# past its exp. Turned on, Varnish checks every track request's token itself, as musicd does
# (docs/signed-urls-and-limits.md): the same grammar, HMAC-SHA256 of the same bytes with the same
# keys (digest.hmac_sha256, Debian's varnish-vmod-digest; vmod var from Debian's varnish-modules
# holds the keys and the token), exp and st against the clock with the same leeway, the same acl; a
# bad token is refused with 403 (Cache-Control: no-store) and one VCL_Log line naming the reason
# ("url signing: 403, signed-URL token expired": varnishlog -g raw -i VCL_Log). A valid token is
# taken out of the URL, so every listener's token finds the one cached copy (?download and the other
# parameters stay in the URL, and in the hash), and a cached copy is only ever served after a token
# was checked; the token goes on to musicd in the backend request (X-Musicd-Token, put back into the
# URL by vcl_backend_fetch), so a musicd with the same keys checks it once more on a miss (a musicd
# without keys ignores it). The VCL includes this after it made the target a path, so every spelling
# of a track's target ("https://host/musicdb/...") meets the check.
#
# The keys: this file reads them with std.fileread() from a file you write, never from the VCL:
# ADAPT the path /etc/varnish/musicd-url-signing.keys. The file is musicd's format (hex keys,
# one a line, '#' comments), the first two keys tried (so a rotation keeps two live). varnishd
# reads a std.fileread() path once and shares what it read with every VCL naming that path, so a
# VCL reload does not see a changed file: rotate by writing the keys to a new file and loading
# the VCL with its path (sed the path here, then varnishreload or `systemctl reload varnish`,
# which compile the VCL and this file again: the cache stays), or restart varnishd (the cache
# starts empty). The rule that lets VCL match EdgeAuth keys: a VCL string ends at a 00 byte,
# so a key whose bytes hold one (0x00) cannot be used here, and the VCL refuses to load with
# such a key, or with no key, a malformed one, or more than two. Make keys that never hold one:
#     openssl rand -base64 48 | tr -d '\n' | od -An -v -tx1 | tr -d ' \n'
# (64 random printable bytes, hex-encoded). The file's mode: readable by varnishd's worker
# (Debian: user vcache, group varnish: chgrp varnish, chmod 640), as musicd's file is by musicd.
# ADAPT: the leeway (5 s, as musicd's --url-signing-leeway), and every __token__ in this file's
# code and in the VCL's (1 in vcl_recv; in the cluster VCL, 1 more in vcl_backend_fetch) if
# musicd runs with another --url-signing-parameter.

import std;
import digest;
import var;

sub vcl_init {
    # The keys, once per VCL load: the key file's first two keys (hex, as musicd reads them),
    # each decoded to its bytes. A VCL string ends at a 00 byte, so a key holding one cannot be
    # matched here: the VCL refuses to load instead of refusing every token.
    var.global_set("musicd_keys", regsuball(std.fileread("/etc/varnish/musicd-url-signing.keys"),
        "#[^\n]*", ""));
    if (var.global_get("musicd_keys") !~
        "^\s*[0-9A-Fa-f]{64,512}(\s+[0-9A-Fa-f]{64,512})?\s*$") {
        return (fail("url signing: the key file must hold one or two hex keys of 32 to 256 bytes"));
    }
    var.global_set("musicd_key1_hex", regsub(var.global_get("musicd_keys"),
        "^\s*([0-9A-Fa-f]+)[\s\S]*$", "\1"));
    var.global_set("musicd_key2_hex", regsub(var.global_get("musicd_keys"),
        "^\s*[0-9A-Fa-f]+\s*([0-9A-Fa-f]*)\s*$", "\1"));
    var.global_set("musicd_key1", digest.base64_decode(digest.base64_hex(
        var.global_get("musicd_key1_hex"))));
    var.global_set("musicd_key2", digest.base64_decode(digest.base64_hex(
        var.global_get("musicd_key2_hex"))));
    if (digest.base64(var.global_get("musicd_key1")) !=
            digest.base64_hex(var.global_get("musicd_key1_hex")) ||
        digest.base64(var.global_get("musicd_key2")) !=
            digest.base64_hex(var.global_get("musicd_key2_hex"))) {
        return (fail("url signing: a key holds a 00 byte, which a VCL string cannot hold"));
    }
}

sub vcl_recv {
    unset req.http.X-Musicd-Token;
    if ((req.method == "GET" || req.method == "HEAD") &&
        req.url ~ "^/musicdb/[0-9A-Fa-f]{24}/[^/?#]+([?#]|$)") {
        call musicd_check_token;
    }
}

sub musicd_check_token {
    if (req.url !~ "^[^?#]*\?([^#]*&)?__token__(=|&|#|$)") {
        std.log("url signing: 403, signed-URL token missing");
        return (synth(403, "Forbidden"));
    }
    var.set("token", regsub(req.url, "^[^?#]*\?([^#]*&)?__token__=([^&#]*)[\s\S]*$", "\2"));
    if (req.url ~ "^[^?#]*\?([^#]*&)?__token__(=[^&#]*)?&([^#]*&)?__token__(=|&|#|$)" ||
        var.get("token") !~ "^(st=[0-9]{1,12}~)?exp=[0-9]{1,12}~acl=[^~]+(~id=[^~]*)?(~data=[^~]*)?~hmac=[0-9A-Fa-f]{64}$" ||
        var.get("token") ~ "^.{2049}") {
        std.log("url signing: 403, signed-URL token malformed");
        return (synth(403, "Forbidden"));
    }
    var.set("signed", regsub(var.get("token"), "~hmac=[0-9A-Fa-f]{64}$", ""));
    var.set("hmac", "0x" + std.tolower(regsub(var.get("token"), "^.*~hmac=", "")));
    if (digest.hmac_sha256(var.global_get("musicd_key1"), var.get("signed")) != var.get("hmac") &&
        (var.global_get("musicd_key2") == "" ||
         digest.hmac_sha256(var.global_get("musicd_key2"), var.get("signed")) != var.get("hmac"))) {
        std.log("url signing: 403, signed-URL token bad signature");
        return (synth(403, "Forbidden"));
    }
    # ADAPT: 5, musicd's --url-signing-leeway (seconds of clock skew allowed at st and exp).
    var.set_int("leeway", 5);
    if (std.integer(time=now) > std.integer(regsub(var.get("token"),
            "^(st=[0-9]+~)?exp=([0-9]+)~.*$", "\2"), 0) + var.get_int("leeway")) {
        std.log("url signing: 403, signed-URL token expired");
        return (synth(403, "Forbidden"));
    }
    if (var.get("token") ~ "^st=" && std.integer(regsub(var.get("token"), "^st=([0-9]+)~.*$",
            "\1"), 0) > std.integer(time=now) + var.get_int("leeway")) {
        std.log("url signing: 403, signed-URL token not yet valid");
        return (synth(403, "Forbidden"));
    }
    if (!std.strstr("!" + std.tolower(regsub(var.get("token"),
            "^(st=[0-9]+~)?exp=[0-9]+~acl=([^~]+)~.*$", "\2")) + "!",
            "!/musicdb/" + std.tolower(regsub(req.url, "^/musicdb/([0-9A-Fa-f]{24})/.*$", "\1")) +
            "/*!")) {
        std.log("url signing: 403, signed-URL token wrong track");
        return (synth(403, "Forbidden"));
    }
    # Valid: the token leaves the URL, so every listener's token finds the one cached copy (the
    # hash is the URL), and travels on to musicd in a header vcl_backend_fetch puts back.
    set req.http.X-Musicd-Token = var.get("token");
    set req.url = regsub(req.url, "^([^?#]*\?(?:[^#]*&)?)__token__=[^&#]*&?", "\1");
    set req.url = regsub(req.url, "[?&]$", "");
}

sub vcl_backend_fetch {
    if (bereq.http.X-Musicd-Token) {
        if (bereq.url ~ "\?") {
            set bereq.url = bereq.url + "&__token__=" + bereq.http.X-Musicd-Token;
        } else {
            set bereq.url = bereq.url + "?__token__=" + bereq.http.X-Musicd-Token;
        }
        unset bereq.http.X-Musicd-Token;
    }
}

sub vcl_synth {
    if (resp.status == 403) {
        set resp.http.Content-Type = "text/plain; charset=utf-8";
        set resp.http.Cache-Control = "no-store";
        set resp.body = "403 Forbidden" + {"
"};
        return (deliver);
    }
}

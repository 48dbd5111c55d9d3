/*
 * sign_url: musicd --sign-url URL|PATH|ID [--url-lifetime SECONDS], the
 * signer an operator has at hand: prints the track's URL (or path) with a
 * token for it appended to its query, valid for the lifetime from now,
 * signed with the first key of --url-signing-key-file (read with the same
 * checks as start-up); a bare ObjectId prints the token alone.
 */
#ifndef MUSICD_SIGN_URL_H
#define MUSICD_SIGN_URL_H

#include "config/config.h"

/* Prints the signed URL on stdout: the exit status (0, or 2 with one message on stderr). */
int sign_url_print(const struct config *config);

#endif

#!/bin/sh
# certbot deploy hook for coturn (deploy/coturn/turnserver.conf explains why and how to install it).
#
# certbot keeps the TURN certificate's key readable by root only; Debian's coturn runs as user
# turnserver. After each issue and renewal certbot runs this hook with RENEWED_LINEAGE set (e.g.
# /etc/letsencrypt/live/turn.example.com); it copies fullchain.pem and privkey.pem to
# /etc/coturn/, owned by turnserver with mode 0600, each written beside its final name and renamed
# over it (coturn never reads half a file), then has coturn load them: SIGUSR2 makes coturn read
# its certificate again without dropping the relays in progress.
#
# Settings (environment), for other layouts and for tests:
#   RENEWED_LINEAGE  the certificate's folder (certbot sets it)
#   COTURN_CERT_DIR  where the copies go (default /etc/coturn; coturn's cert= and pkey= name them)
#   COTURN_OWNER     the user coturn runs as (default turnserver)
#   COTURN_RELOAD    the command that makes coturn load them (default: SIGUSR2 to coturn.service;
#                    "systemctl restart coturn" also works, and drops the relays in progress)
set -eu

lineage="${RENEWED_LINEAGE:-}"
dest="${COTURN_CERT_DIR:-/etc/coturn}"
owner="${COTURN_OWNER:-turnserver}"
reload="${COTURN_RELOAD:-systemctl kill --signal=SIGUSR2 coturn.service}"
me="coturn-certbot-deploy-hook"

if [ -z "$lineage" ]; then
  echo "$me: RENEWED_LINEAGE is not set: certbot sets it for a deploy hook; by hand, RENEWED_LINEAGE=/etc/letsencrypt/live/<name> $0" >&2
  exit 64
fi
for name in fullchain.pem privkey.pem; do
  if [ ! -r "$lineage/$name" ]; then
    echo "$me: cannot read $lineage/$name; nothing copied" >&2
    exit 66
  fi
done

mkdir -p "$dest"
umask 077
tmp_cert=""
tmp_key=""
cleanup() {
  rm -f "$tmp_cert" "$tmp_key"
}
trap cleanup EXIT
tmp_cert=$(mktemp "$dest/.fullchain.pem.XXXXXX")
tmp_key=$(mktemp "$dest/.privkey.pem.XXXXXX")
# cat follows certbot's live/ symbolic links: the copies are plain files.
cat "$lineage/fullchain.pem" >"$tmp_cert"
cat "$lineage/privkey.pem" >"$tmp_key"
chown "$owner" "$tmp_cert" "$tmp_key"
chmod 0600 "$tmp_cert" "$tmp_key"
mv -f "$tmp_cert" "$dest/fullchain.pem"
mv -f "$tmp_key" "$dest/privkey.pem"
tmp_cert=""
tmp_key=""

if ! sh -c "$reload"; then
  echo "$me: copied the certificate to $dest, but '$reload' failed: coturn still serves the previous one until it restarts" >&2
  exit 1
fi
echo "$me: $dest/fullchain.pem and $dest/privkey.pem updated from $lineage (owner $owner, mode 0600); coturn reloaded"

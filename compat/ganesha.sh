# Starts NFS-Ganesha exporting a fresh directory on free loopback ports, before lib.sh is sourced
# (the gateway's configuration names the server). Sets NFS_EXPORT, NFS_PORT, MNT_PORT, NFS_URL
# (NFSv3, nfs-rs/libnfs syntax) and GANESHA_CLEANUP (to add to lib.sh's CLEANUP_HOOKS).
# rpcbind must be running (Ganesha registers with it); started here, and stopped again, if not.
set -euo pipefail
command -v ganesha.nfsd >/dev/null || { echo "FAIL: ganesha.nfsd missing (scripts/install-deps.sh installs nfs-ganesha nfs-ganesha-vfs)" >&2; exit 1; }
# shellcheck source=compat/helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/helpers.sh"  # free_port
GANESHA_DIR=$(mktemp -d /tmp/penstock-ganesha.XXXXXX)
NFS_EXPORT=$GANESHA_DIR/export
mkdir -p "$NFS_EXPORT"
NFS_PORT=$(free_port)
MNT_PORT=$(free_port)
RPCBIND_PID=
if ! (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null; then
  rpcbind -f -w & RPCBIND_PID=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null && break; sleep 0.05; done
fi
cat >"$GANESHA_DIR/ganesha.conf" <<CONF
NFS_CORE_PARAM {
    Bind_addr = 127.0.0.1;
    NFS_Port = $NFS_PORT;
    MNT_Port = $MNT_PORT;
    NLM_Port = $(free_port);
    Rquota_Port = $(free_port);
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Protocols = 3, 4;
}
NFS_KRB5 { Active_krb5 = false; }
NFSV4 { Graceless = true; }
EXPORT {
    Export_Id = 1;
    Path = $NFS_EXPORT;
    Pseudo = /export;
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
CONF
ganesha.nfsd -F -f "$GANESHA_DIR/ganesha.conf" -L "$GANESHA_DIR/ganesha.log" -p "$GANESHA_DIR/ganesha.pid" \
  </dev/null >/dev/null 2>&1 &
GANESHA_PID=$!
for _ in $(seq 1 200); do
  (exec 3<>/dev/tcp/127.0.0.1/"$NFS_PORT") 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/"$MNT_PORT") 2>/dev/null && break
  kill -0 "$GANESHA_PID" 2>/dev/null || { cat "$GANESHA_DIR/ganesha.log" >&2; echo "FAIL: ganesha.nfsd exited" >&2; exit 1; }
  sleep 0.05
done
NFS_URL="nfs://127.0.0.1$NFS_EXPORT?version=3&nfsport=$NFS_PORT&mountport=$MNT_PORT"
GANESHA_CLEANUP="kill $GANESHA_PID; wait $GANESHA_PID 2>/dev/null; ${RPCBIND_PID:+kill $RPCBIND_PID;} rm -rf $GANESHA_DIR"
# libnfs URL of PATH inside the export (for nfs-cp, nfs-ls).
libnfs_url() { echo "nfs://127.0.0.1$NFS_EXPORT/${1#/}?nfsport=$NFS_PORT&mountport=$MNT_PORT"; }

#!/usr/bin/env bash
# Throwaway OpenStack cloud for the OpenStack driver tests, on 127.0.0.1 only: RabbitMQ
# (Debian package); Keystone 30, Heat 27, Nova 34 (API, conductor, scheduler, one compute with
# Nova's fake virt driver), Placement 16, Neutron 29 (ML2, Open vSwitch mechanism driver),
# Glance 33 (file store) and Cinder 29 (API, scheduler, volume service on a backend that stores
# no data), all of the 2026.2 release, from PyPI in a virtualenv; their databases on a private
# PostgreSQL (scripts/test-env/postgres.sh; Heat's engine on SQLite fails with "database is
# locked" as soon as stacks nest). openstack-services.sh has the compute, network and image
# services, openstack-cinder.sh the block storage service; both say what differs from a
# production cloud.
#
#   eval "$(scripts/test-env/openstack.sh start)"   # prints `export VNFM_TEST_...=...` lines
#   scripts/test-env/openstack.sh env               # prints them again
#   scripts/test-env/openstack.sh stop              # stops what `start` started, removes the dir
#
# Environment:
#   VNFM_OS_DIR   working directory for configs, databases, logs and pid files (required for
#                 start/stop; give a fresh `mktemp -d`; each directory is one independent set
#                 of services on its own free ports)
#   VNFM_OS_VENV  the virtualenv (default ~/.cache/vnfm/openstack-venv); created and filled
#                 from PyPI on first use (about 3 minutes, 800 MB), reused afterwards
#                 (python-openstackclient with python-tackerclient: VNFM_TEST_OPENSTACK_CLI is
#                 its `openstack`; an older venv without the Tacker client gets it on `start`)
#   VNFM_OS_PYTHON  the Python 3.11+ interpreter for a new venv (default: python3.11, python3)
#
# `start` prints the variables of services.tsv's service `openstack`. It is idempotent: when the services of VNFM_OS_DIR are already up, it only prints the
# variables. RabbitMQ is installed with apt-get when missing (needs root). Logs are in
# VNFM_OS_DIR/*.log; `start` prints the tail of the relevant one when something fails.
set -euo pipefail

DIR="${VNFM_OS_DIR:-}"
VENV="${VNFM_OS_VENV:-$HOME/.cache/vnfm/openstack-venv}"
# Versions known to work together: the 2026.2 release of every service.
# python-tackerclient 2.6.0 is the `openstack vim/vnf package/vnflcm` plugin the client tests
# drive (it works with the python-openstackclient 10.x / osc-lib 4.x this set resolves to).
TACKERCLIENT=python-tackerclient==2.6.0
OS_SERVICES=(nova==34.0.0 neutron==29.0.0 openstack-placement==16.0.0 glance==33.0.0 cinder==29.0.0)
PIP_PACKAGES=(keystone==30.0.0 openstack-heat==27.0.1 "${OS_SERVICES[@]}" uwsgi==2.0.31 psycopg2-binary PyMySQL python-heatclient python-openstackclient "$TACKERCLIENT")
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
# shellcheck source=scripts/test-env/openstack-services.sh
. "$HERE/openstack-services.sh"
# shellcheck source=scripts/test-env/openstack-cinder.sh
. "$HERE/openstack-cinder.sh"

ensure_venv() {
    if [[ -x "$VENV/bin/heat-engine" && -x "$VENV/bin/keystone-manage" && -x "$VENV/bin/uwsgi" ]]; then
        # A venv from before the databases moved to PostgreSQL lacks the driver.
        "$VENV/bin/python" -c 'import psycopg2' 2>/dev/null || venv_install "$VENV" psycopg2-binary
        # A venv from before the client tests lacks the Tacker client plugin.
        "$VENV/bin/python" -c 'import tackerclient' 2>/dev/null || venv_install "$VENV" "$TACKERCLIENT"
        # A venv from before the compute, network, image and block storage services lacks them.
        [[ -x "$VENV/bin/nova-compute" && -x "$VENV/bin/neutron-rpc-server" && -x "$VENV/bin/placement-manage" && -x "$VENV/bin/glance-manage" && -x "$VENV/bin/cinder-volume" ]] ||
            venv_install "$VENV" "${OS_SERVICES[@]}" PyMySQL
        return
    fi
    local py="${VNFM_OS_PYTHON:-}"
    if [[ -z "$py" ]]; then
        py=$(command -v python3.11 || command -v python3 || true)
    fi
    [[ -n "$py" ]] || die "no python3 found for the virtualenv"
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$py is older than Python 3.10"
    # uWSGI is built from source: it needs a C compiler and the Python headers; Debian's
    # Python also needs its venv module.
    local headers
    headers=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    if ! command -v cc >/dev/null || [[ ! -f "$headers/Python.h" ]] || ! "$py" -c 'import ensurepip' 2>/dev/null; then
        local ver
        ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        apt_install build-essential "python$ver-dev" "python$ver-venv"
    fi
    echo "openstack.sh: creating $VENV (Keystone + Heat from PyPI, takes a few minutes)" >&2
    VENV_PYTHON=$py venv_install "$VENV" --upgrade pip
    venv_install "$VENV" "${PIP_PACKAGES[@]}"
}

heat_answers() {
    [[ -f "$DIR/env" ]] || return 1
    # shellcheck disable=SC1091
    (. "$DIR/env" && "$VENV/bin/python" - <<'EOF'
import json, os, sys, urllib.request
def post(url, body):
    r = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=5) as resp:
        return resp.headers["X-Subject-Token"], json.load(resp)
e = os.environ
tok, body = post(e["VNFM_TEST_KEYSTONE_URL"] + "/auth/tokens", {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": e["VNFM_TEST_OS_USERNAME"], "domain": {"name": "Default"},
        "password": e["VNFM_TEST_OS_PASSWORD"]}}},
    "scope": {"project": {"name": e["VNFM_TEST_OS_PROJECT"], "domain": {"name": "Default"}}}}})
project = body["token"]["project"]["id"]
r = urllib.request.Request(e["VNFM_TEST_HEAT_URL"] + "/" + project + "/stacks", headers={"X-Auth-Token": tok})
with urllib.request.urlopen(r, timeout=5) as resp:
    sys.exit(0 if resp.status == 200 else 1)
EOF
    ) >/dev/null 2>&1
}

start_rabbitmq() {
    local base="$DIR/rabbitmq"
    mkdir -p "$base/mnesia" "$base/log" "$base/home"
    cat >"$base/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$RMQ_PORT
loopback_users.guest = true
log.console = false
log.file.level = warning
EOF
    echo "[]." >"$base/enabled_plugins"
    # A private epmd on its own port: the Erlang distribution stays on 127.0.0.1 and `stop`
    # ends exactly what this run started.
    spawn epmd /usr/bin/epmd -address 127.0.0.1 -port "$EPMD_PORT"
    wait_port epmd "$EPMD_PORT" 20
    spawn rabbitmq env \
        HOME="$base/home" \
        ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$EPMD_PORT" \
        RABBITMQ_NODENAME="vnfm$RMQ_PORT@localhost" \
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$RMQ_PORT" \
        RABBITMQ_DIST_PORT="$DIST_PORT" \
        RABBITMQ_CONFIG_FILE="$base/rabbitmq.conf" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$base/enabled_plugins" \
        RABBITMQ_MNESIA_BASE="$base/mnesia" RABBITMQ_LOG_BASE="$base/log" \
        RABBITMQ_PID_FILE="$base/rabbit.pid" \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
        /usr/lib/rabbitmq/bin/rabbitmq-server
    wait_port rabbitmq "$RMQ_PORT" 120
}

start_postgres() {
    # The data directory lives under $DIR; the server runs as `postgres` when we are root,
    # which must be able to reach it.
    chmod 711 "$DIR"
    PG_URL=$(VNFM_PG_DIR="$DIR/pg" VNFM_PG_PORT="$PG_PORT" "$HERE/postgres.sh" start) || {
        die "PostgreSQL did not start (scripts/test-env/postgres.sh)"
    }
    echo "$PG_PORT" >"$DIR/pg-port"
    PG_URL=$PG_URL "$VENV/bin/python" - >>"$DIR/postgres-setup.log" 2>&1 <<'EOF' || { log_tail postgres-setup.log; die "creating the databases failed"; }
import os, psycopg2
c = psycopg2.connect(os.environ["PG_URL"])
c.autocommit = True
cur = c.cursor()
for db in ("keystone", "heat", "placement", "nova_api", "nova_cell0", "nova", "neutron", "glance", "cinder"):
    cur.execute(f"CREATE DATABASE {db}")
EOF
}

write_keystone_conf() {
    mkdir -p "$DIR/keystone/fernet-keys" "$DIR/keystone/credential-keys"
    cat >"$DIR/keystone/keystone.conf" <<EOF
[DEFAULT]
use_stderr = true
[database]
connection = postgresql+psycopg2://postgres@127.0.0.1:$PG_PORT/keystone
[token]
provider = fernet
expiration = 3600
[fernet_tokens]
key_repository = $DIR/keystone/fernet-keys
[credential]
key_repository = $DIR/keystone/credential-keys
[cache]
enabled = false
EOF
}

start_keystone() {
    local km=("$VENV/bin/keystone-manage" --config-file "$DIR/keystone/keystone.conf")
    local me
    me=$(id -un)
    {
        "${km[@]}" db_sync
        "${km[@]}" fernet_setup --keystone-user "$me" --keystone-group "$(id -gn)"
        "${km[@]}" credential_setup --keystone-user "$me" --keystone-group "$(id -gn)"
        "${km[@]}" bootstrap --bootstrap-password "$ADMIN_PW" \
            --bootstrap-username admin --bootstrap-project-name admin \
            --bootstrap-role-name admin --bootstrap-service-name keystone \
            --bootstrap-region-id RegionOne \
            --bootstrap-admin-url "http://127.0.0.1:$KS_PORT/v3/" \
            --bootstrap-internal-url "http://127.0.0.1:$KS_PORT/v3/" \
            --bootstrap-public-url "http://127.0.0.1:$KS_PORT/v3/"
    } >>"$DIR/keystone-manage.log" 2>&1 || {
        log_tail keystone-manage.log
        die "keystone-manage failed"
    }
    serve_wsgi keystone "$KS_PORT" 4 --wsgi-file "$SITE/keystone/wsgi/api.py" -- \
        OS_KEYSTONE_CONFIG_FILES="$DIR/keystone/keystone.conf"
    wait_port keystone "$KS_PORT"
}

# Users, projects, roles, the orchestration service and its endpoints, through Keystone's API.
bootstrap_identity() {
    KS_PORT=$KS_PORT HEAT_PORT=$HEAT_PORT ADMIN_PW=$ADMIN_PW HEAT_PW=$HEAT_PW USER_PW=$USER_PW \
        SVC_PW=$SVC_PW NOVA_PORT=$NOVA_PORT NEUTRON_PORT=$NEUTRON_PORT GLANCE_PORT=$GLANCE_PORT \
        PLACEMENT_PORT=$PLACEMENT_PORT CFN_PORT=$CFN_PORT CINDER_PORT=$CINDER_PORT \
        APP_CRED_FILE="$DIR/app-cred" \
        "$VENV/bin/python" - >>"$DIR/bootstrap.log" 2>&1 <<'EOF' || { log_tail bootstrap.log; die "identity bootstrap failed"; }
import json, os, time, urllib.error, urllib.request
e = os.environ
ks = f"http://127.0.0.1:{e['KS_PORT']}/v3"

def call(method, path, body=None, token=None, ok=(200, 201, 204)):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token:
        headers["X-Auth-Token"] = token
    for attempt in range(60):
        try:
            r = urllib.request.Request(ks + path, data=data, method=method, headers=headers)
            with urllib.request.urlopen(r, timeout=60) as resp:
                raw = resp.read()
                return resp, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as err:
            if err.code in ok:
                return err, None
            if err.code >= 500 and attempt < 59:
                time.sleep(0.5)
                continue
            raise SystemExit(f"{method} {path}: {err.code} {err.read()[:300]!r}")
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    raise SystemExit(f"{method} {path}: Keystone did not answer")

resp, _ = call("POST", "/auth/tokens", {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": e["ADMIN_PW"]}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
tok = resp.headers["X-Subject-Token"]

def create(kind, body):
    plural = kind + "s"
    _, out = call("POST", f"/{plural}", {kind: body}, tok)
    return out[kind]["id"]

roles = {}
_, out = call("GET", "/roles", token=tok)
for r in out["roles"]:
    roles[r["name"]] = r["id"]
for name in ("member", "reader", "service", "heat_stack_owner", "heat_stack_user"):
    if name not in roles:
        roles[name] = create("role", {"name": name})

service_project = create("project", {"name": "service", "domain_id": "default"})
vnfm_project = create("project", {"name": "vnfm", "domain_id": "default"})
heat_user = create("user", {"name": "heat", "domain_id": "default", "password": e["HEAT_PW"]})
vnfm_user = create("user", {"name": "vnfm", "domain_id": "default", "password": e["USER_PW"]})
call("PUT", f"/projects/{service_project}/users/{heat_user}/roles/{roles['admin']}", token=tok)
for role in ("member", "reader", "heat_stack_owner"):
    call("PUT", f"/projects/{vnfm_project}/users/{vnfm_user}/roles/{roles[role]}", token=tok)

# The domain of the users Heat creates for stacks (wait condition handles, signals), as
# devstack sets it up.
heat_domain = create("domain", {"name": "heat", "description": "Users and projects Heat creates for stacks"})
domain_admin = create("user", {"name": "heat_domain_admin", "domain_id": heat_domain,
                               "password": e["HEAT_PW"]})
call("PUT", f"/domains/{heat_domain}/users/{domain_admin}/roles/{roles['admin']}", token=tok)

svc = create("service", {"name": "heat", "type": "orchestration", "enabled": True})
# Under /heat-api as devstack serves it: Tacker's functional tests read a stack's name from
# a fixed segment of Heat's resource links, which this prefix puts in place.
url = f"http://127.0.0.1:{e['HEAT_PORT']}/heat-api/v1/%(tenant_id)s"
for iface in ("public", "internal", "admin"):
    create("endpoint", {"service_id": svc, "interface": iface, "url": url, "region_id": "RegionOne"})
# Heat's CloudFormation-compatible API: the metadata and wait condition URLs Heat gives a
# server (OS::Nova::Server's default user_data_format) and OS::Heat::WaitConditionHandle.
svc = create("service", {"name": "heat-cfn", "type": "cloudformation", "enabled": True})
for iface in ("public", "internal", "admin"):
    create("endpoint", {"service_id": svc, "interface": iface,
                        "url": f"http://127.0.0.1:{e['CFN_PORT']}/v1", "region_id": "RegionOne"})

# The compute, placement, network and image services: a user each in the service project,
# and the catalog entries a real cloud has.
for user, kind, url in (
        ("nova", "compute", f"http://127.0.0.1:{e['NOVA_PORT']}/v2.1"),
        ("placement", "placement", f"http://127.0.0.1:{e['PLACEMENT_PORT']}"),
        ("neutron", "network", f"http://127.0.0.1:{e['NEUTRON_PORT']}"),
        ("glance", "image", f"http://127.0.0.1:{e['GLANCE_PORT']}")):
    uid = create("user", {"name": user, "domain_id": "default", "password": e["SVC_PW"]})
    for role in ("admin", "service"):
        call("PUT", f"/projects/{service_project}/users/{uid}/roles/{roles[role]}", token=tok)
    svc = create("service", {"name": user, "type": kind, "enabled": True})
    for iface in ("public", "internal", "admin"):
        create("endpoint", {"service_id": svc, "interface": iface, "url": url, "region_id": "RegionOne"})

# The block storage service: one user, and the service under both types clients look for
# (`block-storage`, the current one; `volumev3`, which Nova's `[cinder] catalog_info` and Heat
# name), as devstack registers it.
uid = create("user", {"name": "cinder", "domain_id": "default", "password": e["SVC_PW"]})
for role in ("admin", "service"):
    call("PUT", f"/projects/{service_project}/users/{uid}/roles/{roles[role]}", token=tok)
for name, kind in (("cinder", "block-storage"), ("cinderv3", "volumev3")):
    svc = create("service", {"name": name, "type": kind, "enabled": True})
    for iface in ("public", "internal", "admin"):
        create("endpoint", {"service_id": svc, "interface": iface, "region_id": "RegionOne",
                            "url": f"http://127.0.0.1:{e['CINDER_PORT']}/v3/%(project_id)s"})

# An application credential of the test user (created with the user's own token).
resp, _ = call("POST", "/auth/tokens", {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": "vnfm", "domain": {"id": "default"}, "password": e["USER_PW"]}}},
    "scope": {"project": {"name": "vnfm", "domain": {"id": "default"}}}}})
_, out = call("POST", f"/users/{vnfm_user}/application_credentials",
              {"application_credential": {"name": "vnfm-test"}}, resp.headers["X-Subject-Token"])
# Its id and secret, one a line, for the env file.
with open(e["APP_CRED_FILE"], "w") as f:
    f.write(f"{out['application_credential']['id']}\n{out['application_credential']['secret']}\n")
print("identity bootstrap done")
EOF
}

write_heat_conf() {
    mkdir -p "$DIR/heat"
    cat >"$DIR/heat/heat.conf" <<EOF
[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:$RMQ_PORT/
host = vnfm-test-$RMQ_PORT
num_engine_workers = 1
# The engine answers its own calls (nested stacks) late on a loaded machine (default 60 s).
rpc_response_timeout = 300
region_name_for_services = RegionOne
# Short intervals keep the tests quick; these are test services.
periodic_interval = 5
max_stacks_per_tenant = 1000
stack_user_domain_name = heat
stack_domain_admin = heat_domain_admin
stack_domain_admin_password = $HEAT_PW
[database]
connection = postgresql+psycopg2://postgres@127.0.0.1:$PG_PORT/heat
[paste_deploy]
api_paste_config = $VENV/etc/heat/api-paste.ini
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:$KS_PORT/v3
auth_url = http://127.0.0.1:$KS_PORT/v3
auth_type = password
username = heat
password = $HEAT_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
[trustee]
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT/v3
username = heat
password = $HEAT_PW
user_domain_name = Default
[clients_keystone]
auth_uri = http://127.0.0.1:$KS_PORT
[clients]
endpoint_type = publicURL
[ec2authtoken]
auth_uri = http://127.0.0.1:$KS_PORT/v3
[oslo_messaging_notifications]
driver = noop
[oslo_messaging_rabbit]
heartbeat_timeout_threshold = 0
[cache]
enabled = false
EOF
}

heat_db() {
    write_heat_conf
    "$VENV/bin/heat-manage" --config-file "$DIR/heat/heat.conf" db_sync >>"$DIR/heat-manage.log" 2>&1 || {
        log_tail heat-manage.log
        die "heat-manage db_sync failed"
    }
}

run_heat() {
    spawn heat-engine "$VENV/bin/heat-engine" --config-file "$DIR/heat/heat.conf"
    serve_wsgi heat-api "$HEAT_PORT" 3 --mount "/heat-api=$SITE/heat/wsgi/api.py" --manage-script-name \
        --pyargv "--config-file $DIR/heat/heat.conf"
    serve_wsgi heat-api-cfn "$CFN_PORT" 1 --wsgi-file "$SITE/heat/wsgi/cfn.py" \
        --pyargv "--config-file $DIR/heat/heat.conf"
}

wait_heat() {
    wait_port heat-api "$HEAT_PORT"
    wait_port heat-api-cfn "$CFN_PORT"
    wait_for "Heat listing the test project's stacks" 300 heat-engine,heat-api heat_answers
}

start() {
    need_dir VNFM_OS_DIR
    ensure_venv
    # No init system starts it: policy-rc.d or its absence keep the package from starting a node.
    need_program /usr/lib/rabbitmq/bin/rabbitmq-server rabbitmq-server
    ensure_mariadb
    ensure_qemu_img
    SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    if alive heat-api && alive heat-engine && alive keystone && alive nova-compute && alive cinder-volume && heat_answers; then
        cat "$DIR/env"
        return
    fi
    # A half-started set from an earlier attempt: begin again from scratch.
    stop_services
    rm -rf "${DIR:?}/keystone" "${DIR:?}/heat" "${DIR:?}/rabbitmq" "${DIR:?}/pg" "$DIR"/*.log "$DIR/env" "$DIR/identity-ready" \
        "${DIR:?}/nova" "${DIR:?}/neutron" "${DIR:?}/glance" "${DIR:?}/placement" "${DIR:?}/mariadb" "${DIR:?}/cinder"
    read -r KS_PORT HEAT_PORT RMQ_PORT DIST_PORT EPMD_PORT PG_PORT NOVA_PORT NEUTRON_PORT \
        GLANCE_PORT PLACEMENT_PORT MY_PORT CFN_PORT CINDER_PORT <<<"$(python3 "$HERE/free_ports.py" 13 | tr '\n' ' ')"
    # The compute host's name (Nova's and its Open vSwitch agent's), unique per set of services.
    COMPUTE_HOST=vnfm-compute-$RMQ_PORT
    # Hex: an URL-safe token starts with '-' one time in 64, and command-line tools then take
    # the password for an option (keystone-manage bootstrap --bootstrap-password -x...).
    ADMIN_PW=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(18))')
    HEAT_PW=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(18))')
    USER_PW=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(18))')
    SVC_PW=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(18))')
    umask 077
    print_versions
    start_postgres
    # Side by side (two cores: the schema migrations are mostly Python start-up): the message
    # queue, Keystone with its users and catalog, every other service's database schema and
    # then its processes (which connect to RabbitMQ and Keystone when they are up).
    in_parallel start_rabbitmq identity_up placement_up glance_up neutron_up nova_up heat_up cinder_up
    local app_cred_id app_cred_secret
    { read -r app_cred_id && read -r app_cred_secret; } <"$DIR/app-cred"
    rm -f "$DIR/app-cred"
    write_env openstack \
        VNFM_TEST_KEYSTONE_URL="http://127.0.0.1:$KS_PORT/v3" \
        VNFM_TEST_OS_USERNAME=vnfm \
        VNFM_TEST_OS_PASSWORD="$USER_PW" \
        VNFM_TEST_OS_PROJECT=vnfm \
        VNFM_TEST_OS_PROJECT_DOMAIN=Default \
        VNFM_TEST_OS_USER_DOMAIN=Default \
        VNFM_TEST_OS_REGION=RegionOne \
        VNFM_TEST_HEAT_URL="http://127.0.0.1:$HEAT_PORT/heat-api/v1" \
        VNFM_TEST_OS_ADMIN_USERNAME=admin \
        VNFM_TEST_OS_ADMIN_PASSWORD="$ADMIN_PW" \
        VNFM_TEST_OS_ADMIN_PROJECT=admin \
        VNFM_TEST_OPENSTACK_CLI="$VENV/bin/openstack" \
        VNFM_TEST_NOVA_URL="http://127.0.0.1:$NOVA_PORT/v2.1" \
        VNFM_TEST_NEUTRON_URL="http://127.0.0.1:$NEUTRON_PORT" \
        VNFM_TEST_GLANCE_URL="http://127.0.0.1:$GLANCE_PORT" \
        VNFM_TEST_PLACEMENT_URL="http://127.0.0.1:$PLACEMENT_PORT" \
        VNFM_TEST_CINDER_URL="http://127.0.0.1:$CINDER_PORT/v3" \
        VNFM_TEST_OS_APP_CRED_ID="$app_cred_id" \
        VNFM_TEST_OS_APP_CRED_SECRET="$app_cred_secret"
    wait_heat
    finish_cloud
    wait_cinder
    cat "$DIR/env"
}

heat_up() { heat_db && run_heat; }

identity_up() {
    write_keystone_conf
    start_keystone
    bootstrap_identity
    touch "$DIR/identity-ready"
}

# Runs each function in a subshell of its own, all at once; dies when any failed (each
# printed what went wrong).
in_parallel() {
    local pids=() f pid failed=0
    for f in "$@"; do
        ("$f") &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    [[ $failed -eq 0 ]] || die "the test cloud did not start (see the messages above)"
}

stop_services() {
    stop_processes cinder-volume cinder-scheduler cinder-api nova-compute nova-scheduler nova-conductor nova-api \
        neutron-rpc neutron-api glance-api placement-api heat-api-cfn heat-api heat-engine keystone mariadb rabbitmq epmd
    if [[ -f "$DIR/pg-port" ]]; then
        VNFM_PG_DIR="$DIR/pg" VNFM_PG_PORT="$(cat "$DIR/pg-port")" "$HERE/postgres.sh" stop >/dev/null 2>&1 || true
        rm -f "$DIR/pg-port"
    fi
}

stop() {
    need_dir VNFM_OS_DIR
    stop_services
    rm -rf "${DIR:?}"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env)
        need_dir VNFM_OS_DIR
        cat "$DIR/env"
        ;;
    *)
        echo "usage: $0 start|stop|env" >&2
        exit 2
        ;;
esac

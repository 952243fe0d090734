# shellcheck shell=bash
# Sourced by scripts/test-env/openstack.sh: Placement, Glance, Neutron and Nova of the test
# cloud (configuration, database schemas, processes) and the resources every test expects
# (flavours, an image, shared external networks). Uses the variables and helpers of
# openstack.sh (DIR, VENV, SITE, the *_PORT and *_PW variables) and common.sh.
#
# What differs from a production cloud, and why (docs/openstack.md has the full list):
# - nova-compute runs Nova's own `fake.FakeDriver` (servers are rows and state, no guest runs);
# - Neutron binds ports with the real `openvswitch` ML2 mechanism driver, which needs an alive
#   Open vSwitch agent on the compute host: no agent runs (it would need Open vSwitch and a
#   kernel datapath), so `register_ovs_agent` reports that agent's state once through
#   Neutron's own RPC client, and `agent_down_time` keeps it alive for the life of the cloud;
#   ports stay DOWN (only an agent wiring a tap would set them ACTIVE);
# - no DHCP, L3 or metadata agent: addresses are allocated and stored, nothing serves them;

# `[keystone_authtoken]` of a service whose Keystone user is $1.
authtoken_section() {
    cat <<EOF
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:$KS_PORT/v3
auth_url = http://127.0.0.1:$KS_PORT/v3
auth_type = password
username = $1
password = $SVC_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
EOF
}

# A section with service credentials ($1 the section, $2 the user).
service_auth_section() {
    cat <<EOF
[$1]
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT/v3
username = $2
password = $SVC_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
EOF
}

# MariaDB for Neutron alone: Neutron 29 supports MySQL only (its 2025.2 migration
# d553edeb540f runs `ALTER TABLE tags CONVERT TO CHARACTER SET utf8mb4`, a syntax error on
# PostgreSQL). The server comes from Debian's mariadb-server, installed when missing.
ensure_mariadb() {
    need_program /usr/sbin/mariadbd mariadb-server
}

start_mariadb() {
    local base="$DIR/mariadb" user=()
    mkdir -p "$base/data"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R mysql: "$base"
        user=(--user=mysql)
    fi
    manage mariadb-install /usr/bin/mariadb-install-db --no-defaults --datadir="$base/data" \
        "${user[@]}" --skip-test-db --auth-root-authentication-method=socket
    spawn mariadb /usr/sbin/mariadbd --no-defaults --datadir="$base/data" "${user[@]}" \
        --bind-address=127.0.0.1 --port="$MY_PORT" --socket="$base/mysqld.sock" \
        --pid-file="$base/mysqld.pid" --skip-name-resolve --innodb-flush-log-at-trx-commit=0 \
        --innodb-buffer-pool-size=64M --max-connections=300 --log-error="$DIR/mariadb.log"
    wait_port mariadb "$MY_PORT"
    manage mariadb-install /usr/bin/mariadb --no-defaults -S "$base/mysqld.sock" -u root -e \
        "CREATE DATABASE neutron CHARACTER SET utf8mb4; CREATE USER 'neutron'@'127.0.0.1' IDENTIFIED BY '$SVC_PW'; GRANT ALL ON neutron.* TO 'neutron'@'127.0.0.1';"
}

pg_url() {
    echo "postgresql+psycopg2://postgres@127.0.0.1:$PG_PORT/$1"
}

# Runs a management command, its output to $DIR/$1.log; dies with the log's tail on failure.
manage() {
    local log=$1
    shift
    "$@" >>"$DIR/$log.log" 2>&1 || {
        log_tail "$log.log"
        die "$(basename "$1") ${*:2} failed"
    }
}

# serve_wsgi NAME PORT PROCESSES UWSGI-ARGS... [-- VAR=VALUE...]: serves a WSGI application
# (UWSGI-ARGS: `--wsgi-file FILE` and the like) with uwsgi on 127.0.0.1:PORT as the process
# NAME (spawn), in PROCESSES processes, with the environment assignments after `--`.
# `--http` (not `--http-socket`): uwsgi's HTTP router keeps connections alive properly. One
# thread per process: with two threads, concurrent requests of one Keystone 30 process see
# each other's token roles (a service-only user's application credential was refused for
# lacking the admin's "member" role, in 5-10% of concurrent creations); the other services'
# request contexts would leak between threads likewise. The HTTP router waits 5 minutes for an
# answer (uwsgi's default is 60 s): on a loaded 2-core machine Nova's POST /servers took
# longer, the router dropped it, and Heat sent the request again (a second server on the same
# port: `PortInUse`).
serve_wsgi() {
    local name=$1 port=$2 processes=$3 app=()
    shift 3
    while (($#)) && [[ $1 != -- ]]; do
        app+=("$1")
        shift
    done
    (($#)) && shift
    spawn "$name" env "$@" "$VENV/bin/uwsgi" --http "127.0.0.1:$port" --http-keepalive --http-timeout 300 \
        "${app[@]}" --master --processes "$processes" --threads 1 --die-on-term --need-app \
        --disable-logging --hook-master-start "unix_signal:15 gracefully_kill_them_all"
}

write_placement_conf() {
    mkdir -p "$DIR/placement"
    {
        cat <<EOF
[DEFAULT]
use_stderr = true
[api]
auth_strategy = keystone
[placement_database]
connection = $(pg_url placement)
EOF
        authtoken_section placement
    } >"$DIR/placement/placement.conf"
}

placement_db() {
    write_placement_conf
    manage placement-manage "$VENV/bin/placement-manage" --config-file "$DIR/placement/placement.conf" db sync
}

run_placement() {
    serve_wsgi placement-api "$PLACEMENT_PORT" 2 --wsgi-file "$SITE/placement/wsgi/api.py" -- \
        OS_PLACEMENT_CONFIG_DIR="$DIR/placement"
}

write_glance_conf() {
    mkdir -p "$DIR/glance/images" "$DIR/glance/staging" "$DIR/glance/tasks"
    cp "$VENV/etc/glance/glance-api-paste.ini" "$DIR/glance/"
    {
        cat <<EOF
[DEFAULT]
use_stderr = true
enabled_backends = fs:file
image_size_cap = 1073741824
[database]
connection = $(pg_url glance)
[paste_deploy]
flavor = keystone
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = $DIR/glance/images
[os_glance_staging_store]
filesystem_store_datadir = $DIR/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = $DIR/glance/tasks
[oslo_concurrency]
lock_path = $DIR/glance/locks
[oslo_messaging_notifications]
driver = noop
EOF
        authtoken_section glance
    } >"$DIR/glance/glance-api.conf"
}

glance_db() {
    write_glance_conf
    manage glance-manage "$VENV/bin/glance-manage" --config-file "$DIR/glance/glance-api.conf" db_sync
}

run_glance() {
    serve_wsgi glance-api "$GLANCE_PORT" 2 --wsgi-file "$SITE/glance/wsgi/api.py" -- \
        OS_GLANCE_CONFIG_DIR="$DIR/glance"
}

write_neutron_conf() {
    mkdir -p "$DIR/neutron/state"
    {
        cat <<EOF
[DEFAULT]
use_stderr = true
core_plugin = ml2
service_plugins =
auth_strategy = keystone
transport_url = rabbit://guest:guest@127.0.0.1:$RMQ_PORT/
api_paste_config = $VENV/etc/neutron/api-paste.ini
state_path = $DIR/neutron/state
host = $COMPUTE_HOST
api_workers = 2
rpc_workers = 1
rpc_state_report_workers = 0
# The one (registered, not running) Open vSwitch agent stays alive for the cloud's life.
agent_down_time = 2147483
# No DHCP agent runs: nothing to notify, nothing to schedule networks on.
dhcp_agent_notification = false
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
[database]
connection = mysql+pymysql://neutron:$SVC_PW@127.0.0.1:$MY_PORT/neutron?charset=utf8mb4
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security
[ml2_type_vxlan]
vni_ranges = 1:10000
[ml2_type_flat]
flat_networks = public
[securitygroup]
firewall_driver = openvswitch
[oslo_concurrency]
lock_path = $DIR/neutron/locks
[oslo_messaging_notifications]
driver = noop
[oslo_messaging_rabbit]
heartbeat_timeout_threshold = 0
EOF
        authtoken_section neutron
        service_auth_section nova nova
        service_auth_section placement placement
    } >"$DIR/neutron/neutron.conf"
}

neutron_db() {
    start_mariadb
    write_neutron_conf
    manage neutron-db-manage "$VENV/bin/neutron-db-manage" --config-file "$DIR/neutron/neutron.conf" upgrade heads
}

run_neutron() {
    serve_wsgi neutron-api "$NEUTRON_PORT" 2 --wsgi-file "$SITE/neutron/wsgi/api.py" -- \
        OS_NEUTRON_CONFIG_DIR="$DIR/neutron" OS_NEUTRON_CONFIG_FILES=neutron.conf
    spawn neutron-rpc "$VENV/bin/neutron-rpc-server" --config-file "$DIR/neutron/neutron.conf"
}

# The Open vSwitch agent of the compute host, as its own state report (Neutron's RPC client,
# the call an agent makes at start): the `openvswitch` mechanism driver binds ports on hosts
# with an alive agent of its type.
register_ovs_agent() {
    COMPUTE_HOST=$COMPUTE_HOST "$VENV/bin/python" - --config-file "$DIR/neutron/neutron.conf" \
        >>"$DIR/neutron-agent-report.log" 2>&1 <<'EOF' || { log_tail neutron-agent-report.log; die "registering the Open vSwitch agent with Neutron failed"; }
import os, sys, time
from oslo_config import cfg
from neutron.common import config
from neutron.conf.agent import common as agent_conf
from neutron_lib import context, rpc as n_rpc
from neutron_lib.agent import topics
config.register_common_config_options()
agent_conf.register_agent_state_opts_helper(cfg.CONF)
cfg.CONF(sys.argv[1:], project="neutron")
n_rpc.init(cfg.CONF)
from neutron.agent import rpc as agent_rpc
api = agent_rpc.PluginReportStateAPI(topics.REPORTS)
state = {
    "binary": "neutron-openvswitch-agent", "host": os.environ["COMPUTE_HOST"], "topic": "N/A",
    "agent_type": "Open vSwitch agent", "start_flag": True,
    "configurations": {"tunnel_types": ["vxlan"], "tunneling_ip": "127.0.0.1",
                       "bridge_mappings": {"public": "br-ex"}, "integration_bridge": "br-int",
                       "ovs_hybrid_plug": False, "ovs_capabilities": {"datapath_types": ["system"],
                       "iface_types": ["internal", "vxlan"]}},
}
for attempt in range(120):
    try:
        api.report_state(context.get_admin_context_without_session(), dict(state), use_call=True)
        print("Open vSwitch agent of", state["host"], "registered")
        break
    except Exception as e:  # the RPC server may still be starting
        if attempt == 119:
            raise
        time.sleep(1)
EOF
}

write_nova_conf() {
    mkdir -p "$DIR/nova/state" "$DIR/nova/instances"
    cp "$VENV/etc/nova/api-paste.ini" "$DIR/nova/"
    {
        cat <<EOF
[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:$RMQ_PORT/
host = $COMPUTE_HOST
my_ip = 127.0.0.1
state_path = $DIR/nova/state
instances_path = $DIR/nova/instances
compute_driver = fake.FakeDriver
# No Neutron agent plugs VIFs: Nova must not wait for network-vif-plugged events.
vif_plugging_is_fatal = false
vif_plugging_timeout = 0
# Servers are shut down right away when a test stops them.
shutdown_timeout = 0
heal_instance_info_cache_interval = -1
[api]
auth_strategy = keystone
[api_database]
connection = $(pg_url nova_api)
[database]
connection = $(pg_url nova)
[wsgi]
api_paste_config = $DIR/nova/api-paste.ini
# The tests run side by side: no quota on servers.
[quota]
instances = -1
cores = -1
ram = -1
[conductor]
workers = 1
[scheduler]
workers = 1
discover_hosts_in_cells_interval = 2
[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
[glance]
region_name = RegionOne
[cinder]
os_region_name = RegionOne
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT/v3
username = nova
password = $SVC_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
[vnc]
enabled = false
[oslo_concurrency]
lock_path = $DIR/nova/locks
[oslo_messaging_notifications]
driver = noop
[oslo_messaging_rabbit]
heartbeat_timeout_threshold = 0
# Nova sends its service token along with the user's: Cinder deletes a volume attachment
# Nova asks for (detach, server deletion) only with it (the fix of OSSA-2023-003).
[service_user]
send_service_user_token = true
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT/v3
username = nova
password = $SVC_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
[cache]
enabled = false
EOF
        authtoken_section nova
        service_auth_section placement placement
        service_auth_section neutron neutron
    } >"$DIR/nova/nova.conf"
}

nova_db() {
    write_nova_conf
    local nm=("$VENV/bin/nova-manage" --config-file "$DIR/nova/nova.conf")
    manage nova-manage "${nm[@]}" api_db sync
    manage nova-manage "${nm[@]}" cell_v2 map_cell0 --database_connection "$(pg_url nova_cell0)"
    manage nova-manage "${nm[@]}" cell_v2 create_cell --name cell1
    manage nova-manage "${nm[@]}" db sync
}

run_nova() {
    serve_wsgi nova-api "$NOVA_PORT" 2 --wsgi-file "$SITE/nova/wsgi/osapi_compute.py" -- \
        OS_NOVA_CONFIG_DIR="$DIR/nova" OS_NOVA_CONFIG_FILES="api-paste.ini;nova.conf"
    spawn nova-conductor "$VENV/bin/nova-conductor" --config-file "$DIR/nova/nova.conf"
    spawn nova-scheduler "$VENV/bin/nova-scheduler" --config-file "$DIR/nova/nova.conf"
    spawn nova-compute "$VENV/bin/nova-compute" --config-file "$DIR/nova/nova.conf"
}

placement_up() { placement_db && run_placement; }
glance_up() { glance_db && run_glance; }
neutron_up() { neutron_db && run_neutron; }
# Nova's services ask Keystone for their tokens as they start (and exit on a refusal): they
# start once their users exist.
nova_up() {
    nova_db
    wait_for "Keystone's users and catalog" 300 "" test -f "$DIR/identity-ready"
    run_nova
}

# Waits until every service answers and the compute host is mapped to its cell, then creates
# what the tests expect: flavours, an image, shared external networks.
finish_cloud() {
    wait_port placement-api "$PLACEMENT_PORT"
    wait_port glance-api "$GLANCE_PORT"
    wait_port neutron-api "$NEUTRON_PORT"
    wait_port nova-api "$NOVA_PORT"
    register_ovs_agent
    check_alive nova-conductor nova-scheduler nova-compute neutron-rpc
    wait_for "nova-compute's host mapped to cell1" 600 nova-compute compute_host_mapped
    # shellcheck disable=SC1091
    (. "$DIR/env" && "$VENV/bin/python" - >>"$DIR/cloud-setup.log" 2>&1 <<'EOF') || { log_tail cloud-setup.log; die "creating the test cloud's flavours, image and networks failed"; }
import os, time
import openstack
e = os.environ
admin = openstack.connect(auth_url=e["VNFM_TEST_KEYSTONE_URL"], username="admin",
                          password=e["VNFM_TEST_OS_ADMIN_PASSWORD"], project_name="admin",
                          user_domain_name="Default", project_domain_name="Default",
                          region_name="RegionOne")
for name, ram, vcpus in (("m1.tiny", 512, 1), ("m1.small", 2048, 1), ("m1.medium", 4096, 2)):
    admin.compute.create_flavor(name=name, ram=ram, vcpus=vcpus, disk=1, is_public=True)
# The image the test packages name (tests/support: swImage "cirros-0.6"), public: a few bytes,
# the fake virt driver boots anything.
admin.image.create_image(name="cirros-0.6", data=b"vnfm test image\n", disk_format="raw",
                         container_format="bare", visibility="public")
# Shared external networks (the `resourceId`s of the tests' extVirtualLinks), each with its
# subnet; ports of every project can be made on them. They belong to the test project, as the
# networks an NFVO's tenant brings: Neutron's policy lets only a network's owner (or an
# administrator) choose a port's fixed address on it, which the tests' requests do.
vnfm = admin.identity.find_project("vnfm", domain_id="default")
for net, subnet, cidr in (("net-ext-1", "subnet-ext-1", "10.10.0.0/24"),
                          ("net-ext-2", "subnet-ext-2", "10.10.9.0/24"),
                          ("net-shared-ext", "subnet-shared", "10.10.0.0/24")):
    n = admin.network.create_network(name=net, shared=True, is_router_external=False,
                                     project_id=vnfm.id)
    admin.network.create_subnet(network_id=n.id, name=subnet, cidr=cidr, ip_version=4,
                                enable_dhcp=False, project_id=vnfm.id)
# Nova reaches the compute host through Placement: wait until it schedules.
for _ in range(240):
    if any(True for _ in admin.placement.resource_providers()):
        break
    time.sleep(0.5)
else:
    raise SystemExit("the compute host never appeared in Placement")
print("test cloud resources created")
EOF
}

# Whether the compute host is mapped to its cell, after mapping the hosts found.
compute_host_mapped() {
    local nm=("$VENV/bin/nova-manage" --config-file "$DIR/nova/nova.conf")
    "${nm[@]}" cell_v2 discover_hosts --verbose >>"$DIR/nova-manage.log" 2>&1 || true
    grep -q "$COMPUTE_HOST" <("${nm[@]}" cell_v2 list_hosts 2>/dev/null)
}

# The services' versions, for the log of a run.
print_versions() {
    "$VENV/bin/python" - <<'EOF' >&2
from importlib.metadata import version
names = ["keystone", "openstack-heat", "nova", "neutron", "openstack-placement", "glance", "cinder"]
print("openstack.sh: test cloud " + ", ".join(f"{n} {version(n)}" for n in names))
EOF
}

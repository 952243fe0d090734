# Sourced by scripts/test-env/openstack.sh: Cinder of the test cloud (cinder-api, -scheduler
# and -volume of the same release as the other services). Uses the variables and helpers of
# openstack.sh and openstack-services.sh (DIR, VENV, SITE, HERE, the *_PORT and *_PW
# variables, spawn, manage, pg_url, authtoken_section, serve_wsgi, die).
#
# What differs from a production cloud (docs/openstack.md has the full list): the volume
# backend is `vnfm_cinder_backend.ImageRecordingDriver` (next to this file), Cinder's own fake
# backend `FakeLoggingVolumeDriver` with its two image copies, which need the volume's block
# device, recorded instead of done: volumes are rows, the backend stores no data. Creating a
# volume from an image downloads the image from Glance and checks it with qemu-img (Debian's
# qemu-utils, installed when missing) as on a real backend.

# qemu-img: Cinder inspects a downloaded image with it before copying it to a volume.
ensure_qemu_img() {
    command -v qemu-img >/dev/null || ensure_debian_package qemu-utils
}

write_cinder_conf() {
    mkdir -p "$DIR/cinder/state"
    {
        cat <<EOF
[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:$RMQ_PORT/
host = $COMPUTE_HOST
my_ip = 127.0.0.1
state_path = $DIR/cinder/state
auth_strategy = keystone
api_paste_config = $VENV/etc/cinder/api-paste.ini
resource_query_filters_file = $VENV/etc/cinder/resource_filters.json
enabled_backends = fake
default_volume_type = __DEFAULT__
# The image's metadata is copied to the volume: Glance is found in Keystone's catalog.
glance_catalog_info = image:glance:publicURL
# The tests run side by side: no quota on volumes.
quota_volumes = -1
quota_gigabytes = -1
quota_snapshots = -1
osapi_volume_workers = 2
[fake]
volume_backend_name = fake
volume_driver = vnfm_cinder_backend.ImageRecordingDriver
[database]
connection = $(pg_url cinder)
# Cinder reads an image's format with its privileged helper; the services run as their own
# user here (root in CI), so the helper is started directly, without sudo.
[cinder_sys_admin]
helper_command = $VENV/bin/privsep-helper --config-file $DIR/cinder/cinder.conf
[oslo_concurrency]
lock_path = $DIR/cinder/locks
[oslo_messaging_notifications]
driver = noop
[oslo_messaging_rabbit]
heartbeat_timeout_threshold = 0
[coordination]
backend_url = file://$DIR/cinder/state
EOF
        authtoken_section cinder
        cat <<EOF
[nova]
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT/v3
username = nova
password = $SVC_PW
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
EOF
    } >"$DIR/cinder/cinder.conf"
}

cinder_db() {
    write_cinder_conf
    manage cinder-manage "$VENV/bin/cinder-manage" --config-file "$DIR/cinder/cinder.conf" db sync
}

run_cinder() {
    local conf="$DIR/cinder/cinder.conf"
    spawn cinder-api "$VENV/bin/uwsgi" --http "127.0.0.1:$CINDER_PORT" --http-keepalive --http-timeout 300 \
        --wsgi-file "$SITE/cinder/wsgi/api.py" --pyargv "--config-file $conf" \
        --master --processes 2 --threads 1 --die-on-term --need-app --disable-logging \
        --hook-master-start "unix_signal:15 gracefully_kill_them_all"
    spawn cinder-scheduler "$VENV/bin/cinder-scheduler" --config-file "$conf"
    # The backend module lives next to this script.
    spawn cinder-volume env PYTHONPATH="$HERE" "$VENV/bin/cinder-volume" --config-file "$conf"
}

# cinder-volume asks Keystone nothing as it starts, cinder-api does on the first request.
cinder_up() { cinder_db && run_cinder; }

# Waits until Cinder's API answers and its volume service is up (the scheduler then places
# volumes on it).
wait_cinder() {
    wait_port "$CINDER_PORT" cinder-api cinder-api
    local name i
    for name in cinder-scheduler cinder-volume; do
        alive "$name" || { log_tail "$name.log"; die "$name exited while starting"; }
    done
    for i in $(seq 240); do
        "$VENV/bin/cinder-manage" --config-file "$DIR/cinder/cinder.conf" service list \
            2>/dev/null | grep -q "cinder-volume .*enabled *:-)" && return 0
        alive cinder-volume || { log_tail cinder-volume.log; die "cinder-volume exited while starting"; }
        [[ $i -lt 240 ]] || { log_tail cinder-volume.log; die "cinder-volume did not report in time"; }
        sleep 0.5
    done
}

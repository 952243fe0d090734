# shellcheck shell=bash
# Sourced by scripts/test-env/openstack.sh: Cinder of the test cloud (cinder-api, -scheduler
# and -volume of the same release as the other services). Uses the variables and helpers of
# openstack.sh and openstack-services.sh (DIR, VENV, SITE, HERE, the *_PORT and *_PW
# variables, manage, pg_url, authtoken_section, service_auth_section, serve_wsgi) and common.sh.
#
# What differs from a production cloud (docs/openstack.md has the full list): the volume
# backend is `vnfm_cinder_backend.ImageRecordingDriver` (next to this file), Cinder's own fake
# backend `FakeLoggingVolumeDriver` with its two image copies, which need the volume's block
# device, recorded instead of done: volumes are rows, the backend stores no data. Creating a
# volume from an image downloads the image from Glance and checks it with qemu-img (Debian's
# qemu-utils, installed when missing) as on a real backend.

# qemu-img: Cinder inspects a downloaded image with it before copying it to a volume.
ensure_qemu_img() {
    need_program qemu-img qemu-utils
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
        service_auth_section nova nova
    } >"$DIR/cinder/cinder.conf"
}

cinder_db() {
    write_cinder_conf
    manage cinder-manage "$VENV/bin/cinder-manage" --config-file "$DIR/cinder/cinder.conf" db sync
}

run_cinder() {
    local conf="$DIR/cinder/cinder.conf"
    serve_wsgi cinder-api "$CINDER_PORT" 2 --wsgi-file "$SITE/cinder/wsgi/api.py" --pyargv "--config-file $conf"
    spawn cinder-scheduler "$VENV/bin/cinder-scheduler" --config-file "$conf"
    # The backend module lives next to this script.
    spawn cinder-volume env PYTHONPATH="$HERE" "$VENV/bin/cinder-volume" --config-file "$conf"
}

# cinder-volume asks Keystone nothing as it starts, cinder-api does on the first request.
cinder_up() { cinder_db && run_cinder; }

# Waits until Cinder's API answers and its volume service is up (the scheduler then places
# volumes on it).
wait_cinder() {
    wait_port cinder-api "$CINDER_PORT"
    check_alive cinder-scheduler cinder-volume
    wait_for "cinder-volume reporting up" 600 cinder-volume cinder_volume_up
}

cinder_volume_up() {
    "$VENV/bin/cinder-manage" --config-file "$DIR/cinder/cinder.conf" service list 2>/dev/null |
        grep -q "cinder-volume .*enabled *:-)"
}

#!/usr/bin/env bash
# A real OAuth 2.0 authorization server for the external-authorization tests: Keycloak's server
# distribution (org.keycloak:keycloak-quarkus-dist from Maven Central, fetched once into a cache
# outside the checkout) in development mode (`kc.sh start-dev`) on 127.0.0.1, with an H2 file
# database in its own directory, and a realm `vnfm` whose clients, roles, claim mappers and keys
# this script sets up through Keycloak's admin REST API.
#
#   eval "$(scripts/test-env/keycloak.sh start)"   # prints `export VNFM_TEST_KEYCLOAK_...=...` lines
#   scripts/test-env/keycloak.sh env               # prints them again
#   scripts/test-env/keycloak.sh fetch             # only fetches (or finds) the distribution
#   scripts/test-env/keycloak.sh stop              # stops it, removes the directory
#
# Environment:
#   VNFM_KEYCLOAK_DIR    working directory for the database, the generated secrets and key, the
#                        log and the pid file (required for start/stop; give a fresh
#                        `mktemp -d`; each directory is one independent server on its own ports)
#   VNFM_KEYCLOAK_CACHE  where the distribution is kept, one per version (default
#                        ${XDG_CACHE_HOME:-~/.cache}/vnfm/keycloak); a second run finds it
#   VNFM_KEYCLOAK_JAVA   the Java (21 or later) to run it with (default: Temurin 25 at
#                        /usr/lib/jvm/temurin-25-jdk-amd64, else the first JDK >= 21 there)
#
# `start` prints the variables of services.tsv's service `keycloak`; VNFM_TEST_KEYCLOAK_DIR,
# the working directory, holds
#     clients.json     {"<client id>": "<secret>"} of every confidential client below
#     client-key.pem   the private key (RSA, PKCS#8) of the private_key_jwt client `vnfm-pkjwt`,
#                      registered with kid `vnfm-pkjwt-1`
#     tls/ca.pem       the CA of Keycloak's HTTPS certificate and of the client certificates
#     tls/<client>.pem, tls/<client>.key   the certificates (CN=<client>) and keys (PKCS#8)
#                      of the mutual TLS clients `vnfm-mtls` and `tenant-a-mtls`
#
# The realm `vnfm` (access tokens are JWTs with the audience `vnfm` (and the VNFM's other
# introspecting clients: Keycloak introspects a token only for a client of its audience), the realm roles in
# `realm_access.roles` and the project in `project_id`, by mappers of each caller's client):
#   roles            realm roles `reader`, `member`, `admin` (Keystone's names)
#   tenant-a         client credentials; roles member; claim project_id=proj-a, project_name=Project A
#   tenant-b         client credentials; member; project_id=proj-b
#   reader-a         client credentials; reader; project_id=proj-a
#   nobody-a         client credentials; no mapped role; project_id=proj-a
#   cloud-admin      client credentials; admin and member; no project
#   other-audience   client credentials; member; project_id=proj-a; without the audience
#                    mapper (its tokens are for another audience)
#   short-lived      client credentials; member; project_id=proj-a; tokens live 5 s
#   tenant-a-es256, tenant-a-eddsa   as tenant-a, tokens signed ES256 (P-256) and EdDSA (Ed25519)
#   vnfm             the VNFM's own client at the introspection endpoint, client_secret_basic or
#                    client_secret_post; also the client of its outgoing calls (client
#                    credentials: its tokens, without roles, have the audience `nfvo`)
#   vnfm-jwt         the same by client_secret_jwt
#   vnfm-pkjwt       the same by private_key_jwt (client-key.pem)
#   vnfm-mtls        the same by tls_client_auth (tls/vnfm-mtls.pem, subject CN=vnfm-mtls)
#   nfvo             the client of an NFVO or notification subscriber that the VNFM calls with
#                    tokens of the realm: it introspects them (client_secret_basic)
#   tenant-a-mtls    as tenant-a, authenticating by its certificate (tls/tenant-a-mtls.pem) at
#                    the HTTPS endpoint; its tokens are bound to that certificate (RFC 8705,
#                    cnf.x5t#S256)
#
# `start` is idempotent: when the server of VNFM_KEYCLOAK_DIR is up, it only prints the
# variables. Start-up: about 25 s on 2 cores (the first start after a fetch also
# "augments" the distribution in the cache, 25 s more, once); memory: a heap of at most 512 MiB,
# about 0.5 GiB resident. Needs Java >= 21, Maven (`mvn`, for the first fetch), python3, curl
# and openssl.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/test-env/common.sh
. "$HERE/common.sh"
DIR="${VNFM_KEYCLOAK_DIR:-}"
VERSION=26.7.3
CACHE="${VNFM_KEYCLOAK_CACHE:-$VNFM_CACHE/keycloak}"
HOME_DIR="$CACHE/keycloak-$VERSION"
REALM=vnfm

find_java() {
    if [[ -n "${VNFM_KEYCLOAK_JAVA:-}" ]]; then
        echo "$VNFM_KEYCLOAK_JAVA"
        return
    fi
    local d v
    for d in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
        [[ -x "$d/bin/java" ]] || continue
        v=$("$d/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
        if [[ -n "$v" && "$v" -ge 21 ]]; then
            echo "$d/bin/java"
            return
        fi
    done
    die "Keycloak $VERSION needs Java 21 or later (none under /usr/lib/jvm; set VNFM_KEYCLOAK_JAVA)"
}

# Fetches the distribution from Maven Central into the cache (once per version) and prepares
# it for development mode (Keycloak's build step, which writes into the distribution).
fetch() {
    if [[ -f "$HOME_DIR/.vnfm-ready" ]]; then
        echo "keycloak.sh: Keycloak $VERSION from $HOME_DIR" >&2
        return
    fi
    command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Keycloak $VERSION from Maven Central"
    local java
    cache_work "$CACHE" fetch
    echo "keycloak.sh: fetching org.keycloak:keycloak-quarkus-dist:$VERSION from Maven Central into $CACHE" >&2
    # A Maven repository of its own, deleted afterwards: only the archive is kept.
    work_run mvn.log "fetching Keycloak $VERSION from Maven Central failed" \
        mvn -B -q dependency:copy "-Dartifact=org.keycloak:keycloak-quarkus-dist:$VERSION:tar.gz" \
        "-DoutputDirectory=$WORK" "-Dmaven.repo.local=$WORK/m2"
    tar -xzf "$WORK/keycloak-quarkus-dist-$VERSION.tar.gz" -C "$WORK"
    rm -rf "$HOME_DIR"
    mv "$WORK/keycloak-$VERSION" "$HOME_DIR"
    rm -rf "$WORK/m2" "$WORK/keycloak-quarkus-dist-$VERSION.tar.gz"
    java=$(find_java)
    # Development mode's build step ("augmentation": Keycloak's build-time options, here the
    # health endpoints), done here once rather than by the first start. `kc.sh build` refuses
    # the dev profile, so start-dev runs (as the process `build` of the work directory) until
    # the build is done (it then starts the server in a new JVM, which is stopped at once).
    local DIR=$WORK
    spawn build env JAVA_HOME="$(dirname "$(dirname "$java")")" KC_BOOTSTRAP_ADMIN_USERNAME=admin \
        KC_BOOTSTRAP_ADMIN_PASSWORD=unused "$HOME_DIR/bin/kc.sh" start-dev \
        --http-host=127.0.0.1 --http-port=0 --http-management-port=0 --health-enabled=true \
        "--db-url=jdbc:h2:file:$WORK/h2/keycloakdb;NON_KEYWORDS=VALUE"
    if ! (wait_for "Keycloak's build step" 300 build grep -qs "Running the server in development mode" "$WORK/build.log"); then
        stop_processes build
        work_done
        die "Keycloak's build step failed; the log's end is above"
    fi
    stop_processes build
    work_done
    rm -rf "$HOME_DIR/data"
    touch "$HOME_DIR/.vnfm-ready"
    echo "keycloak.sh: Keycloak $VERSION fetched and built in $WORK_SECONDS s ($(du -sh "$HOME_DIR" | cut -f1))" >&2
}

# The admin REST API: `admin METHOD PATH [JSON]`, with the master admin's token.
admin() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS -f -X "$method" -H "Authorization: Bearer $ADMIN_TOKEN")
    [[ -z "$body" ]] || args+=(-H 'Content-Type: application/json' --data-binary "$body")
    curl "${args[@]}" "$BASE/admin/realms$path"
}

# The realm, its roles, clients, scopes, mappers and service accounts, as one JSON document
# (POST /admin/realms takes a whole realm representation).
realm_json() {
    python3 - "$DIR" "$REALM" <<'EOF'
import json, secrets, subprocess, sys, base64
d, realm = sys.argv[1], sys.argv[2]
secret = {c: secrets.token_urlsafe(24) for c in ["tenant-a", "tenant-b", "reader-a", "nobody-a", "cloud-admin", "other-audience", "short-lived", "tenant-a-es256", "tenant-a-eddsa", "vnfm", "vnfm-jwt", "vnfm-pkjwt", "nfvo"]}
# Clients authenticating by their certificate (CN=<client id>, tls/), mutual TLS.
x509 = lambda cid: {"x509.subjectdn": f"CN={cid}", "x509.allow.regex.pattern.comparison": "false"}
del secret["vnfm-pkjwt"]
json.dump(secret, open(f"{d}/clients.json", "w"), indent=1)
# The RSA key of vnfm-pkjwt: its public half as a JWK.
modulus = subprocess.run(["openssl", "pkey", "-in", f"{d}/client-key.pem", "-noout", "-text"], capture_output=True, text=True, check=True).stdout
hexs = "".join(modulus.split("modulus:")[1].split("publicExponent")[0].split()).replace(":", "")
n = bytes.fromhex(hexs).lstrip(b"\0")
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
jwks = {"keys": [{"kty": "RSA", "kid": "vnfm-pkjwt-1", "use": "sig", "alg": "RS256", "n": b64(n), "e": "AQAB"}]}

def claim(name, value):
    return {"name": name, "protocol": "openid-connect", "protocolMapper": "oidc-hardcoded-claim-mapper",
            "config": {"claim.name": name, "claim.value": value, "jsonType.label": "String",
                       "access.token.claim": "true", "introspection.token.claim": "true",
                       "id.token.claim": "false", "userinfo.token.claim": "false"}}

def mapper(name, kind, **config):
    config = {k.replace("_", "."): v for k, v in config.items()}
    config.update({"access.token.claim": "true", "introspection.token.claim": "true",
                   "id.token.claim": "false", "userinfo.token.claim": "false"})
    return {"name": name, "protocol": "openid-connect", "protocolMapper": kind, "config": config}

def caller(cid, project=None, audience=True, attrs=None):
    # The realm roles in realm_access.roles (Keycloak's own place for them), the audience
    # `vnfm`, and the project as hard-coded claims.
    mappers = [mapper("realm roles", "oidc-usermodel-realm-role-mapper",
                      claim_name="realm_access.roles", multivalued="true", jsonType_label="String")]
    if audience:
        # Keycloak 26 introspects a token only for a client of its audience: the VNFM's
        # clients at the introspection endpoint are audiences too.
        for aud in ["vnfm", "vnfm-jwt", "vnfm-pkjwt", "vnfm-mtls"]:
            mappers.append(mapper(f"audience {aud}", "oidc-audience-mapper", included_custom_audience=aud))
    if project:
        mappers.append(claim("project_id", project))
    if project == "proj-a":
        mappers.append(claim("project_name", "Project A"))
    c = {"clientId": cid, "enabled": True, "publicClient": False,
         "clientAuthenticatorType": "client-secret" if cid in secret else "client-x509",
         "serviceAccountsEnabled": True,
         "standardFlowEnabled": False, "directAccessGrantsEnabled": False,
         "protocol": "openid-connect", "protocolMappers": mappers,
         "attributes": attrs or {}}
    if cid in secret:
        c["secret"] = secret[cid]
    return c

def introspector(cid, authenticator, attrs=None, outgoing=True):
    # The VNFM's clients get tokens for its outgoing calls too (client credentials): for the
    # NFVO or subscriber stand-in `nfvo`, which introspects them (so it is their audience).
    c = {"clientId": cid, "enabled": True, "publicClient": False, "bearerOnly": False,
         "clientAuthenticatorType": authenticator, "serviceAccountsEnabled": outgoing,
         "standardFlowEnabled": False, "directAccessGrantsEnabled": False,
         "protocol": "openid-connect", "attributes": attrs or {},
         "protocolMappers": [mapper("audience nfvo", "oidc-audience-mapper",
                                    included_custom_audience="nfvo")] if outgoing else []}
    if cid in secret:
        c["secret"] = secret[cid]
    return c

clients = [
    caller("tenant-a", "proj-a"), caller("tenant-b", "proj-b"), caller("reader-a", "proj-a"),
    caller("nobody-a", "proj-a"), caller("cloud-admin"), caller("other-audience", "proj-a", audience=False),
    caller("short-lived", "proj-a", attrs={"access.token.lifespan": "5"}),
    caller("tenant-a-es256", "proj-a", attrs={"access.token.signed.response.alg": "ES256"}),
    caller("tenant-a-eddsa", "proj-a", attrs={"access.token.signed.response.alg": "EdDSA"}),
    introspector("vnfm", "client-secret"),
    introspector("vnfm-jwt", "client-secret-jwt", {"token.endpoint.auth.signing.alg": "HS256"}),
    introspector("vnfm-pkjwt", "client-jwt", {"use.jwks.string": "true", "jwks.string": json.dumps(jwks),
                                              "token.endpoint.auth.signing.alg": "RS256"}),
    introspector("vnfm-mtls", "client-x509", x509("vnfm-mtls")),
    introspector("nfvo", "client-secret", outgoing=False),
    caller("tenant-a-mtls", "proj-a",
           attrs={**x509("tenant-a-mtls"), "tls.client.certificate.bound.access.tokens": "true"}),
]
roles = {"tenant-a": ["member"], "tenant-b": ["member"], "reader-a": ["reader"], "nobody-a": [],
         "cloud-admin": ["admin", "member"], "other-audience": ["member"], "short-lived": ["member"],
         "tenant-a-es256": ["member"], "tenant-a-eddsa": ["member"], "tenant-a-mtls": ["member"],
         "vnfm": [], "vnfm-jwt": [], "vnfm-pkjwt": [], "vnfm-mtls": []}
users = [{"username": f"service-account-{c}", "enabled": True, "serviceAccountClientId": c,
          "realmRoles": r + [f"default-roles-{realm}"]} for c, r in roles.items()]
doc = {"realm": realm, "enabled": True, "accessTokenLifespan": 300, "sslRequired": "none",
       "roles": {"realm": [{"name": n} for n in ["reader", "member", "admin"]]},
       "clients": clients, "users": users}
print(json.dumps(doc))
EOF
}

# Adds a key provider to the realm: `key_provider NAME PROVIDER PRIORITY [KEY VALUE]...`.
key_provider() {
    local name=$1 provider=$2 priority=$3
    shift 3
    local config="\"priority\": [\"$priority\"], \"active\": [\"true\"], \"enabled\": [\"true\"]"
    while (($# >= 2)); do
        config+=", \"$1\": [\"$2\"]"
        shift 2
    done
    admin POST "/$REALM/components" "{\"name\": \"$name\", \"providerId\": \"$provider\", \"providerType\": \"org.keycloak.keys.KeyProvider\", \"parentId\": \"$REALM_ID\", \"config\": {$config}}"
}

# A CA of the test's own (tls/ca.pem), Keycloak's HTTPS certificate for 127.0.0.1 from it,
# the certificates of the mutual TLS clients (CN=<client id>), and the PKCS#12 trust store of
# the CA that Keycloak checks client certificates against.
tls_material() {
    local t=$DIR/tls keytool=$1
    rm -rf "$t"
    mkdir -p "$t"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
        -subj /CN=vnfm-test-keycloak-ca -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$t/ca.key" -out "$t/ca.pem" 2>/dev/null
    local name cn ext
    for name in server vnfm-mtls tenant-a-mtls; do
        if [[ $name == server ]]; then
            cn=127.0.0.1
            ext='subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'
        else
            cn=$name
            ext='extendedKeyUsage=clientAuth'
        fi
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
            -keyout "$t/$name.key" -out "$t/$name.csr" 2>/dev/null
        # shellcheck disable=SC2059 # the extensions hold \n on purpose
        openssl x509 -req -in "$t/$name.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
            -CAcreateserial -days 7 -out "$t/$name.pem" \
            -extfile <(printf "basicConstraints=critical,CA:FALSE\n$ext\n") 2>/dev/null
        rm -f "$t/$name.csr"
    done
    "$keytool" -importcert -noprompt -storetype PKCS12 -keystore "$t/truststore.p12" \
        -storepass vnfm-test -alias ca -file "$t/ca.pem" >/dev/null 2>&1
    chmod 600 "$t"/*.key
}

setup_realm() {
    ADMIN_TOKEN=$(curl -sS -f "$BASE/realms/master/protocol/openid-connect/token" \
        -d grant_type=password -d client_id=admin-cli -d username=admin \
        --data-urlencode "password=$ADMIN_PASSWORD" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$DIR/client-key.pem" 2>/dev/null
    chmod 600 "$DIR/client-key.pem"
    admin POST "" "$(realm_json)"
    chmod 600 "$DIR/clients.json"
    REALM_ID=$(admin GET "/$REALM" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    # Signing keys for ES256 and EdDSA tokens, beside the realm's RS256 key.
    key_provider ecdsa ecdsa-generated 90 ecdsaEllipticCurveKey P-256
    key_provider eddsa eddsa-generated 80 eddsaEllipticCurveKey Ed25519
}

start() {
    need_dir VNFM_KEYCLOAK_DIR
    running_env keycloak && return
    fetch
    stop_processes -w 15 keycloak
    rm -rf "${DIR:?}/h2" "$DIR/tx" "$DIR/keycloak.log" "$DIR/env"
    local java port mgmt tls started
    java=$(find_java)
    read -r port mgmt tls <<<"$(python3 "$HERE/free_ports.py" 3 | tr '\n' ' ')"
    BASE="http://127.0.0.1:$port"
    TLS_BASE="https://127.0.0.1:$tls"
    tls_material "$(dirname "$java")/keytool"
    ADMIN_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
    started=$(date +%s)
    # The database and the transaction log are this directory's; the distribution in the cache
    # is only read.
    spawn keycloak env JAVA_HOME="$(dirname "$(dirname "$java")")" \
        JAVA_OPTS_KC_HEAP="-Xms64m -Xmx512m" \
        JAVA_OPTS_APPEND="-XX:TieredStopAtLevel=1 -Dquarkus.transaction-manager.object-store.directory=$DIR/tx" \
        KC_BOOTSTRAP_ADMIN_USERNAME=admin KC_BOOTSTRAP_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
        "$HOME_DIR/bin/kc.sh" start-dev \
        --http-host=127.0.0.1 --http-port="$port" --http-management-port="$mgmt" \
        --https-port="$tls" --https-certificate-file="$DIR/tls/server.pem" \
        --https-certificate-key-file="$DIR/tls/server.key" --https-client-auth=request \
        --https-trust-store-file="$DIR/tls/truststore.p12" --https-trust-store-password=vnfm-test \
        --https-trust-store-type=PKCS12 \
        --health-enabled=true \
        "--db-url=jdbc:h2:file:$DIR/h2/keycloakdb;NON_KEYWORDS=VALUE"
    # Ready when the master realm's metadata answers.
    wait_for "Keycloak answering at $BASE" 120 keycloak http_ok "$BASE/realms/master/.well-known/openid-configuration"
    setup_realm || { log_tail keycloak.log; die "setting up the realm $REALM failed"; }
    write_env keycloak \
        VNFM_TEST_KEYCLOAK_URL="$BASE" \
        VNFM_TEST_KEYCLOAK_ISSUER="$BASE/realms/$REALM" \
        VNFM_TEST_KEYCLOAK_TLS_URL="$TLS_BASE" \
        VNFM_TEST_KEYCLOAK_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
        VNFM_TEST_KEYCLOAK_DIR="$DIR"
    chmod 600 "$DIR/env"
    echo "keycloak.sh: Keycloak $VERSION at $BASE (realm $REALM) ready in $(($(date +%s) - started)) s" >&2
    cat "$DIR/env"
}

stop() {
    need_dir VNFM_KEYCLOAK_DIR
    stop_processes -w 15 keycloak
    rm -rf "${DIR:?}"
}

case "${1:-}" in
    fetch) fetch ;;
    start) start ;;
    stop) stop ;;
    env)
        need_dir VNFM_KEYCLOAK_DIR
        cat "$DIR/env"
        ;;
    *)
        echo "usage: $0 fetch|start|stop|env" >&2
        exit 2
        ;;
esac

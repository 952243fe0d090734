//! The validator against the real Keystone that `scripts/test-env/openstack.sh start` runs:
//! users and projects are created through Keystone's API with the admin token. Built as ignored
//! tests, saying so, when Keystone's variables were not set at build time
//! (`#[vnfm_test_env::needs(keystone)]`); under `CI` they run, and fail without it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use vnfm_keystone::testing::TestKeystone;
use vnfm_keystone::{KeystoneConfig, KeystoneError, KeystoneValidator, ServiceCredentials};
use vnfm_types::SecretString;

fn validator(
    ks: &TestKeystone,
    credentials: ServiceCredentials,
    bound: Duration,
) -> KeystoneValidator {
    let mut config = KeystoneConfig::new(ks.url.clone(), credentials);
    config.revalidate_after = bound;
    KeystoneValidator::new(config).unwrap()
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_and_reader_tokens_map_to_their_project_and_access() {
    let ks = TestKeystone::from_env().await;
    let (_svc, credentials) = ks.service_user().await;
    let a = ks.project("proj-a").await;
    let b = ks.project("proj-b").await;
    let member = ks.user("member", &a, &["member"]).await;
    let reader = ks.user("reader", &b, &["reader"]).await;
    let v = validator(&ks, credentials, Duration::from_secs(60));

    let id = v.validate(&ks.token(&member).await).await.unwrap();
    assert_eq!(id.user_id, member.id);
    assert_eq!(id.user_name, member.name);
    assert_eq!(id.project_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(id.project_name.as_deref(), Some(a.name.as_str()));
    assert_eq!(
        id.project_domain.as_ref().map(|d| d.id.as_str()),
        Some("default")
    );
    // Keystone lists the implied roles too: member implies reader.
    assert!(id.roles.iter().any(|r| r == "member"), "{:?}", id.roles);
    assert!(id.expires_at > std::time::SystemTime::now());
    let access = v.access(&id);
    assert!(
        access.read && access.write && !access.all_projects,
        "{access:?}"
    );

    let id = v.validate(&ks.token(&reader).await).await.unwrap();
    assert_eq!(id.project_id.as_deref(), Some(b.id.as_str()));
    let access = v.access(&id);
    assert!(
        access.read && !access.write && !access.all_projects,
        "{access:?}"
    );
    assert_eq!(v.cached_tokens(), 2);
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_refused_once_the_revalidation_bound_has_passed() {
    let ks = TestKeystone::from_env().await;
    let (_svc, credentials) = ks.service_user().await;
    let p = ks.project("proj").await;
    let member = ks.user("member", &p, &["member"]).await;
    let token = ks.token(&member).await;
    let quick = validator(&ks, credentials.clone(), Duration::from_secs(1));
    let slow = validator(&ks, credentials, Duration::from_secs(600));
    quick.validate(&token).await.unwrap();
    slow.validate(&token).await.unwrap();
    ks.revoke(&token).await;
    // Within its bound the cache still answers (Keystone is not asked)...
    slow.validate(&token).await.unwrap();
    // ...after it, Keystone is asked and says the token is gone.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let e = quick.validate(&token).await.unwrap_err();
    assert!(e.is_invalid_token(), "{e:?}");
    assert_eq!(quick.cached_tokens(), 0);
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_tokens_are_invalid() {
    let ks = TestKeystone::from_env().await;
    let (_svc, credentials) = ks.service_user().await;
    let v = validator(&ks, credentials, Duration::from_secs(60));
    for garbage in [
        "garbage",
        "gAAAAABnotarealfernettokenbutlookslikeoneAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let e = v.validate(garbage).await.unwrap_err();
        assert!(e.is_invalid_token(), "{garbage}: {e:?}");
    }
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_credential_can_be_the_service_identity() {
    let ks = TestKeystone::from_env().await;
    let (svc, _) = ks.service_user().await;
    let (id, secret) = ks.application_credential(&svc).await;
    let p = ks.project("proj").await;
    let reader = ks.user("reader", &p, &["reader"]).await;
    let v = validator(
        &ks,
        ServiceCredentials::ApplicationCredential { id, secret },
        Duration::from_secs(60),
    );
    v.authenticate_service().await.unwrap();
    let identity = v.validate(&ks.token(&reader).await).await.unwrap();
    assert_eq!(identity.user_id, reader.id);
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystone_trouble_is_unavailable_never_an_invalid_token() {
    let ks = TestKeystone::from_env().await;
    let (svc, _) = ks.service_user().await;
    let p = ks.project("proj").await;
    let member = ks.user("member", &p, &["member"]).await;
    let token = ks.token(&member).await;
    // Wrong service password: Keystone cannot be asked; the caller's token is not at fault.
    let wrong = validator(
        &ks,
        ServiceCredentials::Password {
            user: svc.name.clone(),
            password: SecretString::new("not-the-password"),
            user_domain: "Default".into(),
            project: svc.project.name.clone(),
            project_domain: "Default".into(),
        },
        Duration::from_secs(60),
    );
    let e = wrong.validate(&token).await.unwrap_err();
    assert!(
        matches!(e, KeystoneError::ServiceCredentials { status: 401, .. }),
        "{e:?}"
    );
    assert!(e.is_unavailable());
    // A closed port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let closed = KeystoneValidator::new(KeystoneConfig::new(
        format!("http://127.0.0.1:{port}/v3"),
        ServiceCredentials::Password {
            user: svc.name.clone(),
            password: svc.password.clone(),
            user_domain: "Default".into(),
            project: svc.project.name.clone(),
            project_domain: "Default".into(),
        },
    ))
    .unwrap();
    let e = closed.validate(&token).await.unwrap_err();
    assert!(matches!(e, KeystoneError::Unreachable { .. }), "{e:?}");
    assert!(e.is_unavailable());
    // A user without a role that may validate others' tokens.
    let (plain_credentials, plain) = {
        let u = ks.user("plain", &p, &["member"]).await;
        (
            ServiceCredentials::Password {
                user: u.name.clone(),
                password: u.password.clone(),
                user_domain: "Default".into(),
                project: p.name.clone(),
                project_domain: "Default".into(),
            },
            u,
        )
    };
    let other = ks.user("other", &p, &["member"]).await;
    let e = validator(&ks, plain_credentials, Duration::from_secs(60))
        .validate(&ks.token(&other).await)
        .await
        .unwrap_err();
    assert!(
        matches!(e, KeystoneError::Status { status: 403, .. }),
        "{e:?}"
    );
    assert!(e.is_unavailable());
    drop(plain);
}

/// Collects every event and span field the validator logs.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = self.0.lock().unwrap();
        text.push('\n');
        event.record(&mut Fields(&mut text));
    }
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut text = self.0.lock().unwrap();
        text.push('\n');
        attrs.record(&mut Fields(&mut text));
    }
}

#[vnfm_test_env::needs(keystone)]
#[tokio::test]
async fn no_token_or_password_reaches_logs_errors_or_debug_output() {
    use tracing_subscriber::layer::SubscriberExt;
    let ks = TestKeystone::from_env().await;
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let (svc, credentials) = ks.service_user().await;
    let p = ks.project("proj").await;
    let member = ks.user("member", &p, &["member"]).await;
    let token = ks.token(&member).await;
    let v = validator(&ks, credentials, Duration::from_secs(1));
    let identity = v.validate(&token).await.unwrap();
    ks.revoke(&token).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let e = v.validate(&token).await.unwrap_err();
    let shown = format!(
        "{}\n{v:?}\n{identity:?}\n{e}\n{e:?}",
        capture.0.lock().unwrap()
    );
    assert!(shown.contains("Keystone service token obtained"), "{shown}");
    for secret in [
        token.as_str(),
        svc.password.expose(),
        member.password.expose(),
    ] {
        assert!(!shown.contains(secret), "a secret is shown:\n{shown}");
    }
}

/// Tokens validated at the same time keep their own user, project and roles: a reader
/// validated next to members and admins never gains write access.
#[vnfm_test_env::needs(keystone)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_validations_keep_each_tokens_own_roles() {
    let ks = TestKeystone::from_env().await;
    let (_svc, credentials) = ks.service_user().await;
    let mut users = Vec::new();
    for (i, role) in ["reader", "member", "admin"]
        .iter()
        .cycle()
        .take(12)
        .enumerate()
    {
        let project = ks.project(&format!("conc{i}")).await;
        let user = ks.user("conc", &project, &[role]).await;
        let token = ks.token(&user).await;
        users.push(Arc::new((user, *role, token)));
    }
    // A new validator each round: an empty cache, so every token goes to Keystone.
    for _round in 0..2 {
        let v = Arc::new(validator(&ks, credentials.clone(), Duration::from_secs(60)));
        let mut checks = tokio::task::JoinSet::new();
        for entry in &users {
            let (v, entry) = (Arc::clone(&v), Arc::clone(entry));
            checks.spawn(async move {
                let (user, role, token) = &*entry;
                let id = v.validate(token).await.unwrap();
                assert_eq!(id.user_id, user.id);
                assert_eq!(id.project_id.as_deref(), Some(user.project.id.as_str()));
                assert!(id.roles.iter().any(|r| r == role), "{role}: {:?}", id.roles);
                if *role == "reader" {
                    assert!(
                        id.roles.iter().all(|r| r == "reader"),
                        "a reader's token lists {:?}",
                        id.roles
                    );
                    assert!(!v.access(&id).write);
                }
            });
        }
        while let Some(done) = checks.join_next().await {
            done.unwrap();
        }
    }
}

//! The composition root: [`Builder::assemble`] puts together every service around the
//! lifecycle core, [`Vnfm::start`] sets them running.
//!
//! The REST server and embedders that want more than an [`Lcm`] (subscriptions, the VIM
//! registry, notification delivery, the remote NFVO) get them here, assembled once, so that
//! no other crate names a concrete store, HTTP client or driver.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vnfm_driver_api::{CallbackSender, ContentFetcher, MgmtDriver, Nfvo, NfvoSettings};
use vnfm_lcm::{Deliverer, Keyring, Lcm, PkgmSubscriptions, Subscriptions, VimRegistry};
use vnfm_outbound::{
    HttpCallbackSender, HttpContentFetcher, NfvoTimings, OutboundOAuth, Sol003Nfvo,
};
use vnfm_store::Store;

use super::{Builder, EmbedError, PackageLimits, Packages, StoreCatalog, mgmt_of, start_runner};

/// Connect timeout of the default [`HttpCallbackSender`] and [`HttpContentFetcher`].
const CALLBACK_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The remote NFVO connection kept in the store (setting `nfvo`, its secret sealed with the
/// keyring), shared by every replica on the same store.
#[derive(Debug, Clone, Default)]
pub enum NfvoSetting {
    /// Use the stored connection, if any (else the built-in NFVO).
    #[default]
    Stored,
    /// Store this connection (replacing the stored one) and use it.
    Set(NfvoSettings),
    /// Remove the stored connection and use the built-in NFVO.
    Clear,
}

/// Every service of a VNF manager, assembled by [`Builder::assemble`]: the lifecycle core and
/// what serves around it. Nothing runs until [`Vnfm::start`].
pub struct Vnfm {
    /// The lifecycle core.
    pub lcm: Lcm,
    /// The store (writes that enqueue notifications wake the deliverer).
    pub store: Arc<dyn Store>,
    /// The keyring that seals VIM, subscription and NFVO secrets.
    pub keyring: Arc<Keyring>,
    /// Lifecycle change notification subscriptions (their router is the core's).
    pub subscriptions: Subscriptions,
    /// VNF package management subscriptions.
    pub pkgm_subscriptions: PkgmSubscriptions,
    /// VNF fault management: alarms and FM subscriptions; as a `FaultSink` it is where
    /// drivers, plugins and monitoring receivers raise and clear alarms.
    pub faults: vnfm_assurance::FaultManager,
    /// VNF performance management: PM jobs, reports, thresholds, PM subscriptions.
    pub performance: vnfm_assurance::PerformanceManager,
    /// VNF indicators: values (from the VNFDs' PromQL, or pushed), indicator subscriptions.
    pub indicators: vnfm_assurance::IndicatorManager,
    /// The VIM registry.
    pub vims: VimRegistry,
    /// The onboarded VNFDs the core reads: the store's onboarded packages, parsed once.
    pub catalog: Arc<StoreCatalog>,
    /// VNF packages: records, onboarding, lookup (what `vnfm serve`'s package management
    /// interface calls).
    pub packages: Arc<Packages>,
    /// The NFVO asked for grants and packages, when not the built-in one.
    pub nfvo: Option<Arc<dyn Nfvo>>,
    /// The management driver that runs LCM hooks, if any.
    pub mgmt: Option<Arc<dyn MgmtDriver>>,
    /// Fetches content the VNFM is pointed at (packages uploaded from a URI).
    pub content: Arc<dyn ContentFetcher>,
    recovery_interval: Option<Duration>,
    sender: Arc<dyn CallbackSender>,
    /// The deliverer's configuration until [`Vnfm::start`] starts it, then the deliverer.
    delivery: Mutex<Delivery>,
    /// How often the PM collector runs, when a metrics source is configured.
    collect_every: Option<Duration>,
    /// The PM collector, once started.
    collector: Mutex<Option<vnfm_assurance::pm::collector::Collector>>,
    /// How often the indicator collector runs.
    indicator_every: Duration,
    /// The indicator collector, once started.
    indicator_collector: Mutex<Option<vnfm_assurance::indicators::collector::IndicatorCollector>>,
    /// How the infrastructure watch runs, when it does.
    infra_watch: Option<super::InfraWatchOptions>,
    /// The infrastructure watch, once started.
    infra_watch_task: Mutex<Option<vnfm_assurance::fm::InfraWatchTask>>,
}

enum Delivery {
    Off,
    Configured(vnfm_lcm::DelivererConfig),
    Running(Deliverer),
}

impl std::fmt::Debug for Vnfm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vnfm")
            .field("runner_id", &self.lcm.runner_id())
            .field("remote_nfvo", &self.nfvo.as_ref().map(|n| n.describe()))
            .field(
                "delivering",
                &matches!(*self.delivery_state(), Delivery::Running(_)),
            )
            .finish_non_exhaustive()
    }
}

impl Vnfm {
    /// Takes over the operation occurrences a previous run left behind, starts the periodic
    /// recovery sweep and, when configured ([`Builder::deliver_notifications`]), the
    /// notification deliverer. Call it once, when the catalog holds the onboarded VNFDs, so
    /// that resumed operations find theirs. Needs a tokio runtime.
    pub async fn start(&self) -> Result<(), EmbedError> {
        self.packages
            .spool()
            .prepare()
            .map_err(|source| EmbedError::DataDir {
                path: self.packages.spool().dir().to_owned(),
                source,
            })?;
        // Before the runner: a resumed operation may need a package onboarded again.
        let resumed = self.packages.resume_onboarding().await;
        if resumed > 0 {
            tracing::info!(packages = resumed, "interrupted onboardings finished");
        }
        start_runner(&self.lcm, self.recovery_interval).await?;
        let mut delivery = self.delivery_state();
        if let Delivery::Configured(config) = &*delivery {
            let config = vnfm_lcm::DelivererConfig {
                owner: self.lcm.runner_id().to_owned(),
                ..config.clone()
            };
            let deliverer = Deliverer::start(
                self.store.clone(),
                self.keyring.clone(),
                self.sender.clone(),
                config,
            )
            .map_err(EmbedError::Deliverer)?;
            // A write that enqueued notifications wakes the deliverer, so they go out at once
            // rather than at its next poll.
            let waker = deliverer.waker();
            self.store.on_enqueue(Arc::new(move || waker.wake()));
            *delivery = Delivery::Running(deliverer);
        }
        drop(delivery);
        if let Some(every) = self.collect_every {
            let mut collector = self.collector.lock().unwrap_or_else(|e| e.into_inner());
            if collector.is_none() {
                *collector = Some(vnfm_assurance::pm::collector::Collector::start(
                    self.performance.clone(),
                    every,
                ));
            }
        }
        // Also without a metrics source: values an EM set go when their instance is
        // terminated.
        let mut indicators = self
            .indicator_collector
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if indicators.is_none() {
            *indicators = Some(
                vnfm_assurance::indicators::collector::IndicatorCollector::start(
                    self.indicators.clone(),
                    self.indicator_every,
                ),
            );
        }
        drop(indicators);
        if let Some(options) = self.infra_watch {
            let mut task = self
                .infra_watch_task
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if task.is_none() {
                let watch = vnfm_assurance::fm::InfraWatch::new(
                    self.lcm.clone(),
                    self.faults.clone(),
                    options.timeout,
                );
                *task = Some(vnfm_assurance::fm::InfraWatchTask::start(
                    watch,
                    options.every,
                ));
            }
        }
        Ok(())
    }

    /// Stops the core's runner (waiting up to `timeout` for running steps), then the
    /// deliverer (after its deliveries in flight), and removes the package directory if it is
    /// a temporary one.
    pub async fn shutdown(&self, timeout: Duration) {
        self.lcm.shutdown(timeout).await;
        // Dropping the collector stops it.
        drop(
            self.collector
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        drop(
            self.indicator_collector
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        drop(
            self.infra_watch_task
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
        let running = std::mem::replace(&mut *self.delivery_state(), Delivery::Off);
        if let Delivery::Running(d) = running {
            d.shutdown().await;
        }
        // The services hold each other (automatic healing holds the core that reports to
        // it), so they may never be dropped: a temporary package directory goes now.
        if let Err(e) = self.catalog.spool().remove_temporary() {
            tracing::warn!(dir = %self.catalog.spool().dir().display(), error = %e, "removing the temporary package directory failed");
        }
    }

    fn delivery_state(&self) -> std::sync::MutexGuard<'_, Delivery> {
        self.delivery.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Builder {
    /// Assembles every service around the lifecycle core: opens the store (and the data
    /// directory), loads or creates the keyring, resolves the NFVO (given, else the remote one
    /// kept in the store, else the built-in one), and builds the subscriptions, the VIM
    /// registry and the [`Lcm`] over them. Nothing runs until [`Vnfm::start`].
    ///
    /// Needs a keyring ([`Builder::keyring`] or [`Builder::data_dir`]).
    pub async fn assemble(mut self) -> Result<Vnfm, EmbedError> {
        let (store, catalog) = self.open_store_and_catalog().await?;
        let keyring = self.open_keyring()?.ok_or(EmbedError::NoKeyring)?;
        let outbound_oauth = self.outbound_oauth.take();
        let sender = match self.sender.take() {
            Some(s) => s,
            None => {
                let outbound = |source| EmbedError::Outbound {
                    what: "the HTTP client for notifications",
                    source,
                };
                let mut sender =
                    HttpCallbackSender::new(CALLBACK_CONNECT_TIMEOUT).map_err(outbound)?;
                if let Some(o) = outbound_oauth.as_ref().filter(|o| !o.callbacks.is_empty()) {
                    sender = sender
                        .with_issuer_tokens(o.tokens.clone(), &o.callbacks)
                        .map_err(outbound)?;
                    tracing::info!(
                        issuer = o.tokens.issuer(),
                        client_id = o.tokens.client_id(),
                        prefixes = ?o.callbacks,
                        "callbacks under these prefixes get the authorization server's access tokens unless their subscription authenticates otherwise"
                    );
                }
                Arc::new(sender)
            }
        };
        let content = match self.content.take() {
            Some(c) => c,
            None => Arc::new(HttpContentFetcher::new(CALLBACK_CONNECT_TIMEOUT).map_err(
                |source| EmbedError::Outbound {
                    what: "the HTTP client for package uploads from a URI",
                    source,
                },
            )?),
        };
        let nfvo = match self.nfvo.take() {
            Some(n) => Some(n),
            None => {
                stored_nfvo(
                    &*store,
                    &keyring,
                    &self.nfvo_setting,
                    self.max_package_bytes,
                    outbound_oauth.as_ref().filter(|o| o.nfvo),
                )
                .await?
            }
        };
        // Every part links its resources the same way.
        let links = self.config.links.clone();
        let subscriptions = Subscriptions::new(store.clone(), keyring.clone(), sender.clone())
            .with_links(links.clone());
        let pkgm_subscriptions =
            PkgmSubscriptions::new(store.clone(), keyring.clone(), sender.clone())
                .with_links(links.clone());
        let vims = VimRegistry::new(store.clone(), keyring.clone(), self.vim_kinds.clone());
        // The same subscriptions whose cache creating and deleting a subscription clears, so
        // a new subscription gets the next notification.
        let router = self
            .router
            .take()
            .unwrap_or_else(|| Arc::new(subscriptions.router()));
        let directory = self
            .vims
            .take()
            .unwrap_or_else(|| Arc::new(vims.clone()) as Arc<dyn vnfm_lcm::ports::VimDirectory>);
        let mgmt = mgmt_of(self.mgmt.take(), self.scripts.take());
        let late_faults = super::late_sinks::LateFaults::default();
        let late_indicators = super::late_sinks::LateIndicators::default();
        let lcm = self.core(
            Lcm::builder(store.clone(), directory, router, catalog.clone())
                .fault_sink(Arc::new(late_faults.clone()))
                .indicator_sink(Arc::new(late_indicators.clone())),
            nfvo.clone(),
            mgmt.clone(),
        );
        let packages = Arc::new(
            Packages::new(
                store.clone(),
                catalog.clone(),
                PackageLimits {
                    max_package_bytes: self.max_package_bytes,
                    archive: self.archive_limits.clone(),
                },
                self.upload_allow_list,
                nfvo.clone(),
            )
            .with_notifications(pkgm_subscriptions.clone())
            .with_content_fetcher(content.clone())
            .with_mgmt_driver(mgmt.clone())
            .with_links(links.clone()),
        );
        let faults =
            vnfm_assurance::FaultManager::new(store.clone(), keyring.clone(), sender.clone())
                .with_links(links.clone());
        let faults = match self.auto_heal {
            Some(policy) => {
                faults.with_auto_heal(vnfm_assurance::fm::AutoHeal::new(lcm.clone(), policy))
            }
            None => faults,
        };
        // One automatic scaling for alerts, threshold crossings and indicator rules, so that
        // its cooldown and rate limit bound them together.
        let auto_scale = self
            .auto_scale
            .map(|policy| vnfm_assurance::fm::AutoScale::new(lcm.clone(), policy));
        let faults = match &auto_scale {
            Some(auto_scale) => faults.with_auto_scale(auto_scale.clone()),
            None => faults,
        };
        let has_metrics = self.metrics.is_some();
        let collect_every = has_metrics.then_some(self.collect_every);
        let metrics = self.metrics.unwrap_or_else(|| {
            Arc::new(vnfm_driver_api::metrics::NoMetrics)
                as Arc<dyn vnfm_driver_api::metrics::MetricsSource>
        });
        let indicators = vnfm_assurance::IndicatorManager::new(
            store.clone(),
            keyring.clone(),
            sender.clone(),
            catalog.clone(),
            has_metrics.then(|| metrics.clone()),
        )
        .with_links(links.clone());
        let indicators = match &auto_scale {
            Some(auto_scale) => indicators.with_auto_scale(auto_scale.clone()),
            None => indicators,
        };
        // The runner reports hooks' alarms and indicator values to these from now on.
        let _ = late_faults.0.set(faults.clone());
        let _ = late_indicators.0.set(indicators.clone());
        let performance = vnfm_assurance::PerformanceManager::new(
            store.clone(),
            keyring.clone(),
            sender.clone(),
            metrics,
            self.pm_options,
        )
        .with_links(links);
        let performance = match auto_scale {
            Some(auto_scale) => performance.with_auto_scale(auto_scale),
            None => performance,
        };
        Ok(Vnfm {
            lcm,
            store,
            keyring,
            subscriptions,
            pkgm_subscriptions,
            faults,
            performance,
            indicators,
            vims,
            catalog,
            packages,
            nfvo,
            mgmt,
            content,
            recovery_interval: self.recovery_interval,
            sender,
            delivery: Mutex::new(match self.delivery {
                Some(config) => Delivery::Configured(config),
                None => Delivery::Off,
            }),
            collect_every,
            indicator_every: self.collect_every,
            collector: Mutex::new(None),
            indicator_collector: Mutex::new(None),
            infra_watch: self.infra_watch,
            infra_watch_task: Mutex::new(None),
        })
    }

    /// The store: the given one, the one at the URL, or `<data_dir>/vnfm.db`.
    pub(super) async fn open_store(&self) -> Result<Arc<dyn Store>, EmbedError> {
        if let Some(s) = &self.store {
            return Ok(s.clone());
        }
        let url = match (&self.store_url, &self.data_dir) {
            (Some(url), _) => url.clone(),
            (None, Some(dir)) => {
                create_private_dir(dir)?;
                let db = dir.join("vnfm.db");
                // SQLite gives its journal files the database file's mode.
                private_file(&db)?;
                format!("sqlite://{}", db.display())
            }
            (None, None) => return Err(EmbedError::NoStore),
        };
        vnfm_store_sql::open(&url).await.map_err(EmbedError::Store)
    }

    /// The keyring: the given one, or `<data_dir>/fernet.keys` (created on first start).
    pub(super) fn open_keyring(&self) -> Result<Option<Arc<Keyring>>, EmbedError> {
        if let Some(k) = &self.keyring {
            return Ok(Some(k.clone()));
        }
        let Some(dir) = &self.data_dir else {
            return Ok(None);
        };
        create_private_dir(dir)?;
        key_file(&dir.join("fernet.keys")).map(|k| Some(Arc::new(k)))
    }
}

/// Reads `path`'s keyring, creating the file (mode 0600) with a fresh key on first start.
pub fn key_file(path: &Path) -> Result<Keyring, EmbedError> {
    let keys = if path.exists() {
        Keyring::from_key_file(path)
    } else {
        Keyring::generate_key_file(path)
    };
    keys.map_err(|source| EmbedError::Keys {
        path: path.to_owned(),
        source: Box::new(source),
    })
}

/// Applies `setting` to the NFVO connection kept in `store` and connects to the result.
async fn stored_nfvo(
    store: &dyn Store,
    keyring: &Keyring,
    setting: &NfvoSetting,
    max_package_bytes: usize,
    oauth: Option<&OutboundOAuth>,
) -> Result<Option<Arc<dyn Nfvo>>, EmbedError> {
    use vnfm_lcm::nfvo::{load_nfvo_settings, save_nfvo_settings};
    match setting {
        NfvoSetting::Stored => {}
        NfvoSetting::Set(s) => save_nfvo_settings(store, keyring, Some(s))
            .await
            .map_err(EmbedError::NfvoSettings)?,
        NfvoSetting::Clear => save_nfvo_settings(store, keyring, None)
            .await
            .map_err(EmbedError::NfvoSettings)?,
    }
    let Some(settings) = load_nfvo_settings(store, keyring)
        .await
        .map_err(EmbedError::NfvoSettings)?
    else {
        if oauth.is_some() {
            tracing::warn!(
                "the NFVO is to be called with the authorization server's tokens, but no remote NFVO is configured (the built-in one grants)"
            );
        }
        return Ok(None);
    };
    tracing::info!(url = %settings.url, "remote NFVO");
    let mut nfvo = Sol003Nfvo::from_settings(&settings, NfvoTimings::default())
        .map_err(|source| EmbedError::Outbound {
            what: "the remote NFVO",
            source,
        })?
        .with_max_package_bytes(max_package_bytes);
    if let Some(o) = oauth {
        tracing::info!(
            url = %settings.url,
            issuer = o.tokens.issuer(),
            client_id = o.tokens.client_id(),
            "the remote NFVO is called with the authorization server's access tokens (the authentication kept with its connection is not used)"
        );
        nfvo = nfvo.with_issuer_tokens(o.tokens.clone());
    }
    Ok(Some(Arc::new(nfvo)))
}

fn data_err(path: &Path) -> impl FnOnce(std::io::Error) -> EmbedError + '_ {
    move |source| EmbedError::DataDir {
        path: path.to_owned(),
        source,
    }
}

/// Creates `dir` (and its parents) readable by the owner only.
fn create_private_dir(dir: &Path) -> Result<(), EmbedError> {
    std::fs::create_dir_all(dir).map_err(data_err(dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Best effort: a directory the operator prepared (another owner) stays as it is.
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

/// Creates `path` empty with mode 0600 when it does not exist, and takes group and other
/// permissions away from it when it does (a file of an older version).
fn private_file(path: &Path) -> Result<(), EmbedError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path).map_err(data_err(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(data_err(path))?;
    }
    Ok(())
}

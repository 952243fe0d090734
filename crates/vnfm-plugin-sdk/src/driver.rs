//! The [`MgmtDriver`] trait plugin authors implement, and the dispatch from hook names.

use crate::{HookContext, HookOutput, PluginError};

/// What a hook returns.
pub type HookResult = Result<HookOutput, PluginError>;

macro_rules! hooks {
    ($($stem:literal => $start:ident, $end:ident, $rb_start:ident, $rb_end:ident;)*) => {
        /// Every hook name the VNFM can call, in the order of the SOL001 `Vnflcm` interface,
        /// each followed by its rollback pair.
        pub const HOOKS: &[&str] = &[
            $(
                concat!($stem, "_start"),
                concat!($stem, "_end"),
                concat!($stem, "_rollback_start"),
                concat!($stem, "_rollback_end"),
            )*
        ];

        /// A management driver: one method per LCM hook, each a no-op by default. Implement
        /// the hooks your VNFD binds and export the type with
        /// [`export_mgmt_driver!`](crate::export_mgmt_driver).
        ///
        /// Methods run on a thread of their own (never on the VNFM's async runtime), so they
        /// may block; they should call [`HookContext::check`] between long steps. One value of
        /// the type serves every call, possibly several at once.
        pub trait MgmtDriver: Send + Sync + 'static {
            /// Whether [`MgmtDriver::observe`] is implemented: the VNFM then calls it outside
            /// operations, every sweep of its infrastructure watch, for each instantiated
            /// instance whose VNFD binds this plugin. `false` by default.
            fn observes(&self) -> bool {
                false
            }

            /// What the plugin sees of the instance now (`ctx.instance()`, its VIMs and VNFD;
            /// no LCM request or operation occurrence): the alarms to raise or clear
            /// ([`HookOutput::alarms`](crate::HookOutput), `CLEARED` clears) and indicator values
            /// to set. Only called when [`MgmtDriver::observes`] says so; other members of the
            /// answer are ignored. Must be quick: it runs once per instance and sweep.
            fn observe(&self, ctx: &HookContext<'_>) -> HookResult {
                let _ = ctx;
                Ok(HookOutput::default())
            }
            $(
                #[doc = concat!("The `", $stem, "_start` hook. No-op by default.")]
                fn $start(&self, ctx: &HookContext<'_>) -> HookResult {
                    let _ = ctx;
                    Ok(HookOutput::default())
                }
                #[doc = concat!("The `", $stem, "_end` hook. No-op by default.")]
                fn $end(&self, ctx: &HookContext<'_>) -> HookResult {
                    let _ = ctx;
                    Ok(HookOutput::default())
                }
                #[doc = concat!("The `", $stem, "_rollback_start` hook. No-op by default.")]
                fn $rb_start(&self, ctx: &HookContext<'_>) -> HookResult {
                    let _ = ctx;
                    Ok(HookOutput::default())
                }
                #[doc = concat!("The `", $stem, "_rollback_end` hook. No-op by default.")]
                fn $rb_end(&self, ctx: &HookContext<'_>) -> HookResult {
                    let _ = ctx;
                    Ok(HookOutput::default())
                }
            )*
        }

        /// Calls the method of `driver` named by `ctx.hook()`.
        pub(crate) fn dispatch<D: MgmtDriver + ?Sized>(driver: &D, ctx: &HookContext<'_>) -> HookResult {
            match ctx.hook() {
                crate::protocol::OBSERVE_HOOK => driver.observe(ctx),
                $(
                    concat!($stem, "_start") => driver.$start(ctx),
                    concat!($stem, "_end") => driver.$end(ctx),
                    concat!($stem, "_rollback_start") => driver.$rb_start(ctx),
                    concat!($stem, "_rollback_end") => driver.$rb_end(ctx),
                )*
                other => Err(PluginError::invalid_input(format!(
                    "`{other}` is not a Vnflcm hook this plugin's SDK knows"
                ))),
            }
        }
    };
}

hooks! {
    "instantiate" => instantiate_start, instantiate_end, instantiate_rollback_start, instantiate_rollback_end;
    "terminate" => terminate_start, terminate_end, terminate_rollback_start, terminate_rollback_end;
    "modify_information" => modify_information_start, modify_information_end, modify_information_rollback_start, modify_information_rollback_end;
    "change_flavour" => change_flavour_start, change_flavour_end, change_flavour_rollback_start, change_flavour_rollback_end;
    "change_external_connectivity" => change_external_connectivity_start, change_external_connectivity_end, change_external_connectivity_rollback_start, change_external_connectivity_rollback_end;
    "operate" => operate_start, operate_end, operate_rollback_start, operate_rollback_end;
    "heal" => heal_start, heal_end, heal_rollback_start, heal_rollback_end;
    "scale" => scale_start, scale_end, scale_rollback_start, scale_rollback_end;
    "scale_to_level" => scale_to_level_start, scale_to_level_end, scale_to_level_rollback_start, scale_to_level_rollback_end;
    "change_current_package" => change_current_package_start, change_current_package_end, change_current_package_rollback_start, change_current_package_rollback_end;
}

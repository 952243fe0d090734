//! The `vnfConfigurableProperties` members that switch automatic healing and scaling on for an
//! instance and hold its scaling rules. The runner takes them from an INSTANTIATE request's
//! `additionalParams` (as OpenStack Tacker does); the automatic operations that read them are
//! the `vnfm-assurance` crate's.

/// The member that turns automatic healing on for an instance.
pub const AUTOHEAL_PROPERTY: &str = "isAutohealEnabled";

/// The member that turns automatic scaling on for an instance.
pub const AUTOSCALE_PROPERTY: &str = "isAutoscaleEnabled";

/// The member mapping a performance metric to the aspect a threshold crossing on it scales.
pub const THRESHOLD_SCALING_PROPERTY: &str = "thresholdScaling";

/// The member mapping an indicator id to its scaling rule.
pub const INDICATOR_SCALING_PROPERTY: &str = "indicatorScaling";

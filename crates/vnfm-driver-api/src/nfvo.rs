//! The NFVO port: grants (SOL003 clause 9) and packages held by an NFVO.
//!
//! Before an operation changes resources the core asks the NFVO for a grant, in `STARTING`.
//! [`LocalNfvo`] (the default) grants everything as asked; the remote SOL003 client and
//! embedders' own implementations plug in through the same trait.

use async_trait::async_trait;
use vnfm_types::{Grant, GrantInfo, GrantRequest, ProblemDetails};

use crate::DriverError;

/// The NFVO's answer to a grant request.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantDecision {
    /// Granted: the operation goes ahead with these VIMs, zones and assets.
    Granted(Box<Grant>),
    /// Rejected: the operation ends `ROLLED_BACK` with this reason, nothing was changed.
    Rejected(ProblemDetails),
}

/// An NFVO.
#[async_trait]
pub trait Nfvo: Send + Sync {
    /// Asks for a grant. Transient failures (`DriverError::transient`) leave the occurrence in
    /// `FAILED_TEMP`, to retry; a rejection is a [`GrantDecision::Rejected`].
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError>;

    /// The content (CSAR zip) of the onboarded package with VNFD `vnfd_id`, when the NFVO holds
    /// packages; `None` when it does not have it.
    async fn fetch_package(&self, vnfd_id: &str) -> Result<Option<Vec<u8>>, DriverError> {
        let _ = vnfd_id;
        Ok(None)
    }

    /// A short name for logs (`local`, `sol003 https://nfvo...`).
    fn describe(&self) -> String;
}

/// The built-in NFVO: grants every request as asked, with the VIMs of the request (no
/// `vimConnectionInfo`, zones or assets of its own), and holds no packages (the VNFM's own
/// package store is used).
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalNfvo;

/// A grant that accepts every resource of `request`, with identifier `id`.
pub fn grant_everything(request: &GrantRequest, id: String) -> Grant {
    let infos = |defs: &[vnfm_types::ResourceDefinition]| -> Vec<GrantInfo> {
        defs.iter()
            .map(|d| GrantInfo {
                resource_definition_id: d.id.clone(),
                reservation_id: None,
                vim_connection_id: None,
                resource_provider_id: None,
                zone_id: None,
                resource_group_id: None,
            })
            .collect()
    };
    Grant {
        id,
        vnf_instance_id: request.vnf_instance_id.clone(),
        vnf_lcm_op_occ_id: request.vnf_lcm_op_occ_id.clone(),
        vim_connection_info: None,
        zones: Vec::new(),
        add_resources: infos(&request.add_resources),
        temp_resources: infos(&request.temp_resources),
        remove_resources: infos(&request.remove_resources),
        update_resources: infos(&request.update_resources),
        vim_assets: None,
        ext_virtual_links: None,
        ext_managed_virtual_links: None,
        additional_params: None,
        links: None,
    }
}

#[async_trait]
impl Nfvo for LocalNfvo {
    async fn grant(&self, request: &GrantRequest) -> Result<GrantDecision, DriverError> {
        Ok(GrantDecision::Granted(Box::new(grant_everything(
            request,
            format!("local-{}", request.vnf_lcm_op_occ_id),
        ))))
    }

    fn describe(&self) -> String {
        "local".into()
    }
}

//! The lifecycle requests the real-cloud tests repeat, each run to its end and asserted
//! `COMPLETED`.

use super::*;

impl Env {
    /// Instantiates `id` with `request` (a JSON `InstantiateVnfRequest`); answers the
    /// completed occurrence.
    pub(super) async fn instantiate_ok(&self, id: &VnfInstanceId, request: Value) -> VnfLcmOpOcc {
        let op = self
            .lcm
            .instantiate(id, serde_json::from_value(request).unwrap())
            .await
            .unwrap();
        self.completed(op).await
    }

    /// Scales aspect `aspect` of `id` by `steps` (`SCALE_OUT` / `SCALE_IN`); answers the
    /// completed occurrence.
    pub(super) async fn scale_ok(
        &self,
        id: &VnfInstanceId,
        kind: &str,
        aspect: &str,
        steps: u32,
    ) -> VnfLcmOpOcc {
        let op = self
            .lcm
            .scale(
                id,
                serde_json::from_value(
                    json!({"type": kind, "aspectId": aspect, "numberOfSteps": steps}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        self.completed(op).await
    }

    /// Heals the VNFCs of `resources` of `id` (`vnfcInstanceId`: their `vnfcInfo` ids); answers
    /// the completed occurrence.
    pub(super) async fn heal_vnfcs_ok(
        &self,
        id: &VnfInstanceId,
        resources: &[VnfcResourceInfo],
    ) -> VnfLcmOpOcc {
        let inst = self.instance(id).await;
        let vnfcs: Vec<String> = resources
            .iter()
            .map(|r| support::vnfc_info_id(&inst, r))
            .collect();
        let op = self
            .lcm
            .heal(
                id,
                serde_json::from_value(json!({"vnfcInstanceId": vnfcs})).unwrap(),
            )
            .await
            .unwrap();
        self.completed(op).await
    }

    /// Stops (FORCEFUL) and starts every VNFC of `id`, asserting after each that Nova holds
    /// its servers `SHUTOFF`, then `ACTIVE`.
    pub(super) async fn stop_and_start_checked(&self, id: &VnfInstanceId) {
        for (request, status) in [
            (
                json!({"changeStateTo": "STOPPED", "stopType": "FORCEFUL"}),
                "SHUTOFF",
            ),
            (json!({"changeStateTo": "STARTED"}), "ACTIVE"),
        ] {
            let op = self
                .lcm
                .operate(id, serde_json::from_value(request).unwrap())
                .await
                .unwrap();
            self.completed(op).await;
            let inst = self.instance(id).await;
            self.services()
                .assert_servers_status(&servers(&vnfcs(&inst)), status)
                .await;
        }
    }
}

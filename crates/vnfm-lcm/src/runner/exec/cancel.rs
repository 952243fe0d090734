//! Cancellation of a running occurrence: the request as it reaches this run (a channel fed by
//! `cancel` in this process and by the lease keeper from the store) and its stored copy.

use super::*;

/// Op-occ data key under which a cancellation request waits for the runner executing the
/// occurrence (which may be in another process).
pub(crate) const CANCEL_KEY: &str = "cancelRequest";

impl Run {
    pub(super) fn cancel_now(&self) -> Option<CancelModeType> {
        self.pending.or(*self.cancel_rx.borrow())
    }

    pub(super) async fn load_stored_cancel(&mut self) {
        if let Ok(Some(v)) = self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, CANCEL_KEY)
            .await
            && let Some(mode) = parse_cancel(&v)
        {
            self.cancel_tx.send_replace(Some(mode));
        }
    }

    pub(super) async fn clear_cancel_request(&self) {
        let _ = self
            .inner
            .store
            .put_op_occ_data(&self.occ.id, CANCEL_KEY, &serde_json::Value::Null)
            .await;
    }
}

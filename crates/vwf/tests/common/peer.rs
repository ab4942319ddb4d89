//! A local HTTP peer for the tests (wiremock on a runtime of its own), alive as long as the value:
//! the OpenAI-compatible server, chat platforms and plain HTTP endpoints the drivers talk to.

use wiremock::{Mock, MockServer};

pub struct Peer {
    pub rt: tokio::runtime::Runtime,
    pub server: MockServer,
}

impl Peer {
    pub fn start() -> Peer {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
        let server = rt.block_on(MockServer::start());
        Peer { rt, server }
    }

    pub fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(&self.server));
    }

    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.uri())
    }

    /// Checks every `expect` of the mounted mocks (the requests really arrived as matched).
    pub fn verify(&self) {
        self.rt.block_on(self.server.verify());
    }

    pub fn requests(&self) -> Vec<wiremock::Request> {
        self.rt.block_on(self.server.received_requests()).unwrap_or_default()
    }
}

//! The etcd store's connections: one `etcd-client` client per endpoint, on a current-thread tokio runtime
//! of the store's own that the calling thread drives while it waits (one request at a time; no thread
//! hand-off on the way), so the store's blocking operations can be called from any thread, inside another
//! runtime or not. Every request is bounded by a timeout the caller gives; a request still
//! running then is dropped (cancelled) and reported as not answered.

use crate::engine::wit::commands::EtcdTls;
use crate::error::HostError;
use etcd_client::{Certificate, Client, ConnectOptions, Identity, KvClient, TlsOptions};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// Why one request to one endpoint failed.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The gRPC status code, when the server (or the transport) gave one.
    pub(crate) code: Option<u32>,
    /// What failed, in the library's words (never a password: etcd-client does not print them).
    pub(crate) detail: String,
}

impl Failure {
    fn of(e: &etcd_client::Error) -> Self {
        match e {
            etcd_client::Error::GRpcStatus(s) => {
                Self { code: u32::try_from(i32::from(s.code())).ok(), detail: s.message().to_owned() }
            }
            other => Self { code: None, detail: other.to_string() },
        }
    }
}

/// The TLS files of a store, read once when the store is opened.
#[derive(Clone)]
pub(crate) struct TlsFiles {
    ca: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl TlsFiles {
    /// Reads the CA, client certificate and key named by the core's `store-spec` answer (`tls`); a file
    /// that cannot be read is `USAGE` naming its variable and path.
    pub(crate) fn read(tls: &EtcdTls) -> Result<Self, HostError> {
        let read = |path: &Option<String>, variable: &str| -> Result<Option<Vec<u8>>, HostError> {
            let Some(path) = path.as_deref() else { return Ok(None) };
            std::fs::read(path).map(Some).map_err(|e| {
                HostError::usage(format!(
                    "cannot read {variable} {path}: {e}. Point {variable} at a readable PEM file."
                ))
                .with("variable", variable)
                .with("path", path)
            })
        };
        let ca = read(&tls.ca, "BATON_ETCD_CA")?;
        let identity = match (read(&tls.cert, "BATON_ETCD_CERT")?, read(&tls.key, "BATON_ETCD_KEY")?) {
            (Some(c), Some(k)) => Some((c, k)),
            _ => None,
        };
        Ok(Self { ca, identity })
    }

    fn options(&self) -> TlsOptions {
        let mut tls = TlsOptions::new();
        if let Some(ca) = &self.ca {
            tls = tls.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &self.identity {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        tls
    }
}

/// The clients of one store, one per endpoint, connected on first use.
pub(crate) struct Conns {
    runtime: Option<tokio::runtime::Runtime>,
    endpoints: Vec<String>,
    options: ConnectOptions,
    clients: Mutex<Vec<Option<KvClient>>>,
}

impl Conns {
    /// Clients for `endpoints` (without credentials), authenticating as `auth` and with `tls` when given;
    /// a connection attempt gives up after `connect` (each request has its own timeout, see [`Self::call`]).
    pub(crate) fn new(
        endpoints: Vec<String>,
        auth: Option<(String, String)>,
        tls: Option<&TlsFiles>,
        connect: Duration,
    ) -> Result<Self, HostError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| HostError::io("cannot start the etcd client", &e))?;
        let clients = Mutex::new(vec![None; endpoints.len()]);
        // Without a leader a member answers at once instead of holding the request (a partitioned member).
        let mut options = ConnectOptions::new().with_connect_timeout(connect).with_require_leader(true);
        if let Some((user, password)) = auth {
            options = options.with_user(user, password);
        }
        if let Some(tls) = tls {
            options = options.with_tls(tls.options());
        }
        Ok(Self { runtime: Some(runtime), endpoints, options, clients })
    }

    /// The endpoints, in the order requests try them.
    pub(crate) fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// Runs `request` on the client of endpoint `index` (connecting it first if needed), waiting at most
    /// `timeout` for the connection and the answer together. `Err` with `code: None` and a detail saying
    /// so when nothing answered in time.
    pub(crate) fn call<T, F, Fut>(&self, index: usize, timeout: Duration, request: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: FnOnce(KvClient) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        let endpoint = self.endpoints[index].clone();
        let known = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[index].clone();
        let options = known.is_none().then(|| self.options.clone());
        let Some(runtime) = &self.runtime else {
            return Err(Failure { code: None, detail: "the etcd client was stopped".into() });
        };
        let work = async move {
            let work = async {
                let (client, connected) = match known {
                    Some(c) => (c, None),
                    None => {
                        let c = Client::connect([endpoint.as_str()], options).await?.kv_client();
                        (c.clone(), Some(c))
                    }
                };
                let answer = request(client).await?;
                Ok::<_, etcd_client::Error>((answer, connected))
            };
            match tokio::time::timeout(timeout, work).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(Failure::of(&e)),
                Err(_) => Err(Failure { code: None, detail: format!("no answer within {} ms", timeout.as_millis()) }),
            }
        };
        // The calling thread drives the store's runtime itself (no hand-off to another thread); inside
        // another runtime (a command's async main) it cannot, and a scoped thread does.
        let answer = if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| s.spawn(|| runtime.block_on(work)).join())
                .unwrap_or_else(|_| Err(Failure { code: None, detail: "the etcd request thread failed".into() }))
        } else {
            runtime.block_on(work)
        };
        let (value, connected) = answer?;
        if let Some(client) = connected {
            self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[index] = Some(client);
        }
        Ok(value)
    }

    /// Forgets the client of endpoint `index` (after it failed): the next request there connects anew.
    pub(crate) fn forget(&self, index: usize) {
        self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[index] = None;
    }
}

impl Drop for Conns {
    fn drop(&mut self) {
        // Never blocks (a store may be dropped inside another runtime): running requests are abandoned.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

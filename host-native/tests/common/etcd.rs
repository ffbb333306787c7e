//! A real etcd for the tests: `etcd` (Debian's `etcd-server`, installed by `scripts/setup.sh`) started on
//! free loopback ports of its own (never 2379/2380, which a packaged etcd may use), with a temporary data
//! directory, and stopped on drop: exactly the processes these helpers started, by their pid. One member
//! (`Etcd::start`) or three (`Cluster::start`) for the fault tests.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback port nobody listens on right now (the OS picks it; 2379/2380 never).
pub fn free_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !(2379..=2380).contains(&port) {
            return port;
        }
    }
}

/// One member of a cluster this test started.
pub struct Member {
    pub name: String,
    pub client: u16,
    pub peer: u16,
    data: PathBuf,
    child: Option<Child>,
    stopped: bool,
}

impl Member {
    /// `http://127.0.0.1:<client port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client)
    }

    fn spawn(&mut self, cluster: &str, token: &str) {
        let log = std::fs::File::create(self.data.with_extension("log")).unwrap();
        let peer = format!("http://127.0.0.1:{}", self.peer);
        let child = Command::new("etcd")
            .args(["--name", &self.name, "--data-dir"])
            .arg(&self.data)
            .args(["--listen-client-urls", &self.url(), "--advertise-client-urls", &self.url()])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", cluster, "--initial-cluster-token", token, "--initial-cluster-state", "new"])
            // Small but realistic timings: a leader is elected again about a second after it died.
            .args([
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
                "--logger",
                "zap",
                "--log-level",
                "warn",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd is not installed: run scripts/setup.sh (Debian's etcd-server)");
        self.child = Some(child);
        self.stopped = false;
    }

    fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| i32::try_from(c.id()).unwrap())
    }

    fn signal(&self, sig: i32) {
        if let Some(pid) = self.pid() {
            // Our own child only, by its pid.
            let _ = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
        }
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            if self.stopped {
                self.signal(18);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP: the process is alive but answers nothing (a paused VM, a partition).
    pub fn pause(&mut self) {
        self.signal(19);
        self.stopped = true;
    }

    /// SIGCONT after [`Self::pause`].
    pub fn resume(&mut self) {
        self.signal(18);
        self.stopped = false;
    }
}

/// A cluster of `n` members on loopback, stopped (SIGKILL) and removed on drop.
pub struct Cluster {
    pub members: Vec<Member>,
    dir: PathBuf,
    initial: String,
    token: String,
}

impl Cluster {
    /// Starts `n` members and waits until the cluster answers (a leader is elected).
    pub fn start(name: &str, n: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("baton-etcd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let members: Vec<Member> = (0..n)
            .map(|i| Member {
                name: format!("m{i}"),
                client: free_port(),
                peer: free_port(),
                data: dir.join(format!("m{i}")),
                child: None,
                stopped: false,
            })
            .collect();
        let initial =
            members.iter().map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer)).collect::<Vec<_>>().join(",");
        let token = format!("baton-test-{name}-{}", std::process::id());
        let mut c = Self { members, dir, initial, token };
        for i in 0..n {
            let (initial, token) = (c.initial.clone(), c.token.clone());
            c.members[i].spawn(&initial, &token);
        }
        c.wait_healthy(Duration::from_secs(30));
        c
    }

    /// The store spec naming every member: `etcd:http://127.0.0.1:a,http://127.0.0.1:b,...`.
    pub fn spec(&self) -> String {
        format!("etcd:{}", self.endpoints())
    }

    /// The client URLs, comma-separated (for etcdctl).
    pub fn endpoints(&self) -> String {
        self.members.iter().map(Member::url).collect::<Vec<_>>().join(",")
    }

    /// Restarts member `i` from its data directory (after [`Member::kill`]).
    pub fn restart(&mut self, i: usize) {
        let (initial, token) = (self.initial.clone(), self.token.clone());
        self.members[i].spawn(&initial, &token);
    }

    /// The index of the member that is the leader now, if one answers.
    pub fn leader(&self) -> Option<usize> {
        let out = self.etcdctl(&["endpoint", "status", "-w", "json"]).ok()?;
        let status: serde_json::Value = serde_json::from_str(&out).ok()?;
        let entries = status.as_array()?;
        let leader = entries.first()?["Status"]["leader"].as_u64()?;
        let id = entries.iter().find(|e| e["Status"]["header"]["member_id"].as_u64() == Some(leader))?;
        let endpoint = id["Endpoint"].as_str()?;
        self.members.iter().position(|m| m.url() == endpoint)
    }

    /// Waits until every running member answers and a leader exists.
    pub fn wait_healthy(&self, within: Duration) {
        let started = Instant::now();
        let running: Vec<String> =
            self.members.iter().filter(|m| m.child.is_some() && !m.stopped).map(Member::url).collect();
        loop {
            let ok = Command::new("etcdctl")
                .args(["--endpoints", &running.join(","), "--command-timeout=1s", "endpoint", "health"])
                .env("ETCDCTL_API", "3")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                started.elapsed() < within,
                "etcd did not become healthy within {within:?} (logs in {:?})",
                self.dir
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `etcdctl` against every member; its stdout.
    pub fn etcdctl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("etcdctl")
            .args(["--endpoints", &self.endpoints(), "--command-timeout=3s"])
            .args(args)
            .env("ETCDCTL_API", "3")
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Writes `value` (any bytes) at `key`, behind every store's back.
    pub fn put(&self, key: &str, value: &[u8]) {
        let mut child = Command::new("etcdctl")
            .args(["--endpoints", &self.endpoints(), "put", key])
            .env("ETCDCTL_API", "3")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), value).unwrap();
        assert!(child.wait().unwrap().success(), "etcdctl put {key}");
    }

    /// The value at `key`, if any.
    pub fn get(&self, key: &str) -> Option<String> {
        let out = self.etcdctl(&["get", key, "--print-value-only"]).unwrap();
        // etcdctl prints the value and a newline; an absent key prints nothing.
        out.strip_suffix('\n').map(str::to_owned).filter(|_| !out.is_empty())
    }

    /// How many KV requests the members have answered so far: `(transactions, range reads)`, whatever their
    /// outcome, from each member's own counters (`/metrics`: `grpc_server_handled_total`). The difference
    /// over some operations is their round trips, counted by the server.
    pub fn kv_requests(&self) -> (u64, u64) {
        use std::io::{Read, Write};
        let (mut txns, mut ranges) = (0, 0);
        for m in self.members.iter().filter(|m| m.child.is_some() && !m.stopped) {
            let mut conn = std::net::TcpStream::connect(("127.0.0.1", m.client)).unwrap();
            conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
            let mut text = String::new();
            conn.read_to_string(&mut text).unwrap();
            for line in text.lines().filter(|l| l.starts_with("grpc_server_handled_total{")) {
                let count = |method: &str| {
                    let hit = line.contains(&format!("grpc_method=\"{method}\"")) && line.contains("etcdserverpb.KV");
                    if hit {
                        line.rsplit(' ').next().and_then(|n| n.parse::<f64>().ok()).unwrap_or(0.0) as u64
                    } else {
                        0
                    }
                };
                txns += count("Txn");
                ranges += count("Range");
            }
        }
        (txns, ranges)
    }

    /// Deletes every key under `prefix`.
    pub fn delete_prefix(&self, prefix: &str) {
        self.etcdctl(&["del", "--prefix", prefix]).unwrap();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            m.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One etcd member: a cluster of one.
pub type Etcd = Cluster;

impl Etcd {
    /// A single member (`Cluster::start(name, 1)`).
    pub fn single(name: &str) -> Self {
        Self::start(name, 1)
    }
}

//! The attention explorer's page (`cargo xtask explorer` builds it into
//! `target/explorer/`) in headless Chromium, driven through chromedriver's WebDriver:
//! served by `s2s explore`, and opened from disk with models dropped on it. What it shows
//! must be what `s2s` computes: `s2s run`'s outputs (greedy and beam), and
//! `s2s heatmap --json`'s tokens, attention weights and entropies, bit for bit as f32.
//!
//! The page's elements and data attributes that are read here are its DOM contract
//! (explorer/web/explorer.js): `#status[data-state]`, `#model-name`, `#drop-zone`,
//! `#model-input`, `#source`, `#beam`, `#output[data-source][data-ids][data-state]`,
//! `#source-error`, `#play`, `#heatmap` (`thead th.src`, `tbody tr[data-step]` with `th.out[data-token]` and
//! `td[data-w]`, `data-none`), `#step`, `#step-back`, `#step-forward`, `#step-label`,
//! `#entropy .bar[data-step][data-entropy]`, `#topk li[data-id][data-p]`,
//! `#beam-view .hyp[data-tokens]`, `#board` and `#plan[data-bytes]`.
//!
//! Needs /usr/bin/chromium and /usr/bin/chromedriver (`cargo xtask setup`) and the built
//! page (`cargo xtask explorer`); without them the tests fail saying so, never skip.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use s2s_tests::{eval_words, model_file, s2s_bin, s2s_ok, scratch_dir, target_dir};
use serde_json::{json, Value};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Words typed into the page with each model.
const WORDS: usize = 20;
/// netra's fixed source length.
const NETRA_MAX_LEN: usize = 25;
/// How long the page may take to do what it was asked (load a model, decode).
const PAGE_TIMEOUT: Duration = Duration::from_secs(10);

// -------------------------------------------------------------------------------------
// Prerequisites and processes

/// The built page's folder; fails (never skips) when a prerequisite is missing.
fn prerequisites() -> PathBuf {
    for (file, what) in [(CHROMIUM, "Chromium"), (CHROMEDRIVER, "chromedriver")] {
        assert!(
            Path::new(file).is_file(),
            "{file} is missing ({what}, Debian's `chromium` and `chromium-driver`): run `cargo xtask setup`"
        );
    }
    let dir = target_dir().join("explorer");
    for file in [
        "index.html",
        "pkg/s2s_explorer.js",
        "pkg/s2s_explorer_wasm.js",
        "pkg/fonts.css",
    ] {
        assert!(
            dir.join(file).is_file(),
            "{} is missing: run `cargo xtask explorer` (it builds the page)",
            dir.join(file).display()
        );
    }
    dir
}

/// A child process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    listener.local_addr().expect("a bound address").port()
}

/// `s2s explore MODEL --port 0 --dir DIR` (its standard error into `scratch`), and the
/// address its first line prints.
fn serve(model: &Path, dir: &Path, scratch: &Path) -> (Killed, String) {
    let log = scratch.join("explore.stderr");
    let stderr = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let mut child = Command::new(s2s_bin())
        .arg("explore")
        .arg(model)
        .args(["--port", "0", "--dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("starting s2s explore");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reading s2s explore's first line");
    let url = line
        .strip_prefix("serving ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(String::from);
    let Some(url) = url.filter(|u| u.starts_with("http://127.0.0.1:") && u.ends_with('/')) else {
        let _ = child.kill();
        let _ = child.wait();
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        panic!("s2s explore's first line is not `serving http://127.0.0.1:PORT/ ...`: {line:?}; stderr: {stderr}");
    };
    (Killed(child), url)
}

// -------------------------------------------------------------------------------------
// WebDriver

/// A headless Chromium session through chromedriver (both ended when dropped).
struct Browser {
    agent: ureq::Agent,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
    /// chromedriver.
    driver: Killed,
    /// Chromium's profile, of this session alone: its `--user-data-dir` argument finds
    /// what is left of Chromium after chromedriver.
    profile: PathBuf,
    /// chromedriver's log.
    log: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium closes with its session; a hung one (or a failed test's) is killed
        // with chromedriver, by the profile argument that only this session's processes
        // have.
        let _ = self
            .agent
            .delete(&self.session)
            .config()
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .call();
        let _ = self.driver.0.kill();
        let _ = self.driver.0.wait();
        let arg = format!("--user-data-dir={}", self.profile.display());
        for pid in processes_with_arg(&arg) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// The processes (their ids) that have `arg` among their arguments.
fn processes_with_arg(arg: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .collect()
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session with a fresh
    /// profile under `scratch`.
    fn start(scratch: &Path) -> Browser {
        let port = free_port();
        let log = scratch.join("chromedriver.log");
        let driver = Killed(
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", log.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting chromedriver"),
        );
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(40)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        loop {
            let ready = agent
                .get(format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "chromedriver on port {port} is not ready after 15 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = scratch.join("chromium-profile");
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
        ]
        .map(String::from)
        .into_iter()
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
                    "pageLoadStrategy": "normal",
                    "timeouts": { "pageLoad": 20_000, "script": 20_000, "implicit": 0 },
                }
            }
        });
        let mut response = agent
            .post(format!("{base}/session"))
            .send_json(&capabilities)
            .expect("POST /session to chromedriver");
        let status = response.status().as_u16();
        let v: Value = response
            .body_mut()
            .read_json()
            .expect("chromedriver answers JSON");
        let id = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no Chromium session ({status}): {v}"))
            .to_string();
        Browser {
            agent,
            session: format!("{base}/session/{id}"),
            driver,
            profile,
            log,
        }
    }

    /// A WebDriver command: `method` on the session's `path`; its `value`, or a panic
    /// with WebDriver's error.
    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_command(method, path, body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A WebDriver command: its `value`, or the error in a line.
    fn try_command(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.session);
        let response = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            (_, Some(body)) => self.agent.post(&url).send_json(&body),
            (_, None) => self.agent.post(&url).send_json(json!({})),
        };
        let log = self.log.display();
        let mut response =
            response.map_err(|e| format!("{method} {path}: {e} (chromedriver's log: {log})"))?;
        let status = response.status().as_u16();
        let v: Value = response
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_json()
            .map_err(|e| format!("{method} {path}: reading the answer: {e}"))?;
        if status != 200 {
            return Err(format!(
                "{method} {path}: WebDriver error {status}: {} {} (chromedriver's log: {log})",
                v["value"]["error"], v["value"]["message"]
            ));
        }
        Ok(v["value"].clone())
    }

    /// Opens `url` and waits for its load; a page that does not load fails naming the
    /// resources that did (what is missing from them never came).
    fn navigate(&self, url: &str) {
        let Err(e) = self.try_command("POST", "/url", Some(json!({ "url": url }))) else {
            return;
        };
        let loaded = self.try_command(
            "POST",
            "/execute/sync",
            Some(json!({
                "script": "return [document.readyState].concat(performance.getEntriesByType('resource')\
                           .map((r) => `${r.name} (${Math.round(r.duration)} ms)`));",
                "args": [],
            })),
        );
        panic!(
            "{url} did not load: {e}; [document.readyState, the resources loaded]: {}",
            loaded.unwrap_or_else(Value::String)
        );
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its value.
    fn js(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// The WebDriver element reference of the one element `css` selects.
    fn element(&self, css: &str) -> String {
        let v = self.command(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    fn clear(&self, css: &str) {
        let e = self.element(css);
        self.command("POST", &format!("/element/{e}/clear"), None);
    }

    fn send_keys(&self, css: &str, text: &str) {
        let e = self.element(css);
        self.command(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn click(&self, css: &str) {
        let e = self.element(css);
        self.command("POST", &format!("/element/{e}/click"), None);
    }

    /// Waits until `condition` (a JavaScript expression) is true; `what` names it in
    /// the failure, with `state` (a JavaScript expression) evaluated then.
    fn wait(&self, condition: &str, what: &str) {
        let start = Instant::now();
        loop {
            if self.js(&format!("return Boolean({condition});"), json!([])) == true {
                return;
            }
            if start.elapsed() > PAGE_TIMEOUT {
                let status = self.js(
                    "const s = document.getElementById('status'); \
                     const o = document.getElementById('output'); \
                     const e = document.getElementById('source-error'); \
                     return [s && s.dataset.state, s && s.textContent, o && o.dataset.source, \
                             o && o.dataset.state, o && o.textContent, e && e.textContent];",
                    json!([]),
                );
                panic!(
                    "the page did not show {what} within {PAGE_TIMEOUT:?}; \
                     [#status state, #status text, #output source, #output state, #output text, #source-error]: {status}"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The PNG of the window.
    fn screenshot(&self) -> Vec<u8> {
        let v = self.command("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("a base64 screenshot"))
            .expect("the screenshot is base64")
    }

    // ---------------------------------------------------------------------------------
    // The page

    /// Waits for a loaded model named `name`.
    fn wait_ready(&self, name: &str) {
        self.wait(
            &format!(
                "document.getElementById('status').dataset.state === 'ready' && \
                 document.getElementById('model-name').textContent === {}",
                json!(name)
            ),
            &format!("#status ready with #model-name {name}"),
        );
    }

    /// Drops `bytes` as the file `name` on `#drop-zone`, as a user dragging it would.
    fn drop_file(&self, name: &str, bytes: &[u8]) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.js(
            "const bin = atob(arguments[1]); \
             const bytes = new Uint8Array(bin.length); \
             for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); \
             const dt = new DataTransfer(); \
             dt.items.add(new File([bytes], arguments[0], { type: 'application/octet-stream' })); \
             const zone = document.getElementById('drop-zone'); \
             zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true })); \
             zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));",
            json!([name, b64]),
        );
    }

    /// Clears `#source`, types `word` and waits for its decode.
    fn type_word(&self, word: &str) {
        self.clear("#source");
        self.send_keys("#source", word);
        self.wait(
            &format!(
                "document.getElementById('output').dataset.source === {}",
                json!(word)
            ),
            &format!("the decode of {word:?}"),
        );
    }

    /// What the page shows of the current decode.
    fn shown(&self) -> Shown {
        let v = self.js(
            "const $ = (id) => document.getElementById(id); \
             const all = (css) => Array.from(document.querySelectorAll(css)); \
             const out = $('output'); \
             const heat = $('heatmap'); \
             return { \
               output: out.textContent, source: out.dataset.source, ids: out.dataset.ids, \
               state: out.dataset.state, error: $('source-error').textContent, \
               none: heat.getAttribute('data-none'), \
               src: all('#heatmap thead th.src').map((th) => th.textContent), \
               rows: all('#heatmap tbody tr').map((tr) => ({ \
                 step: tr.dataset.step, \
                 out: Array.from(tr.querySelectorAll('th.out')).map((th) => th.getAttribute('data-token')), \
                 w: Array.from(tr.querySelectorAll('td')).map((td) => td.getAttribute('data-w')), \
                 future: tr.classList.contains('future'), current: tr.classList.contains('current'), \
               })), \
               entropy: all('#entropy .bar').map((b) => [b.dataset.step, b.dataset.entropy]), \
               step: $('step').value, min: $('step').min, max: $('step').max, \
               label: $('step-label').textContent, \
               topk: all('#topk li').map((li) => [li.dataset.id, li.dataset.p]), \
               hyps: all('#beam-view .hyp').map((h) => [h.getAttribute('data-tokens'), h.className]), \
             };",
            json!([]),
        );
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("the page's state {v}: {e}"))
    }
}

/// What the page shows of one decode (read in one script).
#[derive(serde::Deserialize, Debug, Clone)]
struct Shown {
    output: String,
    source: Option<String>,
    ids: Option<String>,
    state: Option<String>,
    error: String,
    none: Option<String>,
    src: Vec<String>,
    rows: Vec<Row>,
    entropy: Vec<(Option<String>, Option<String>)>,
    step: String,
    min: String,
    max: String,
    label: String,
    topk: Vec<(Option<String>, Option<String>)>,
    hyps: Vec<(Option<String>, String)>,
}

#[derive(serde::Deserialize, Debug, Clone)]
struct Row {
    step: Option<String>,
    out: Vec<String>,
    w: Vec<Option<String>>,
    future: bool,
    current: bool,
}

// -------------------------------------------------------------------------------------
// What s2s computes

/// `s2s run MODEL --tsv [ARGS]` of `words`: each word's output.
fn run_tsv(model: &Path, words: &[String], args: &[&str]) -> Vec<String> {
    let input: String = words.iter().map(|w| format!("{w}\n")).collect();
    let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"run", &model, &"--tsv"];
    for a in args {
        all.push(a);
    }
    let out = s2s_ok(&all, &input);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), words.len(), "one line per word: {out}");
    lines
        .iter()
        .zip(words)
        .map(|(l, w)| {
            let (source, output) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("no tab: {l:?}"));
            assert_eq!(source, w);
            output.to_string()
        })
        .collect()
}

/// `s2s run MODEL --ids` of `words`: each word's target ids, as the page's `data-ids`.
fn run_ids(model: &Path, words: &[String]) -> Vec<String> {
    let input: String = words.iter().map(|w| format!("{w}\n")).collect();
    let out = s2s_ok(&[&"run", &model, &"--ids"], &input);
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(lines.len(), words.len(), "one line per word: {out}");
    lines
}

/// `s2s heatmap MODEL WORD --json`.
struct Heatmap {
    source: Vec<String>,
    output: Vec<String>,
    weights: Vec<Vec<f32>>,
    entropy: Vec<f32>,
}

fn heatmap(model: &Path, word: &str) -> Heatmap {
    let out = s2s_ok(&[&"heatmap", &model, &word, &"--json"], "");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let strings = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap_or_else(|| panic!("no {k} in {out}"))
            .iter()
            .map(|s| s.as_str().expect("a token").to_string())
            .collect()
    };
    let f32s = |a: &Value| -> Vec<f32> {
        a.as_array()
            .unwrap_or_else(|| panic!("not an array: {a}"))
            .iter()
            .map(|x| x.as_f64().expect("a number") as f32)
            .collect()
    };
    Heatmap {
        source: strings("source"),
        output: strings("output"),
        weights: v["weights"]
            .as_array()
            .unwrap_or_else(|| panic!("no weights in {out}"))
            .iter()
            .map(f32s)
            .collect(),
        entropy: f32s(&v["entropy"]),
    }
}

/// A number the page prints, read as f32 (as Rust reads serde_json's f32).
fn page_f32(text: Option<&str>, what: &str) -> f32 {
    let text = text.unwrap_or_else(|| panic!("{what}: no value"));
    text.parse::<f32>()
        .unwrap_or_else(|e| panic!("{what}: {text:?} is not an f32: {e}"))
}

/// The page's decode of `word` against `s2s heatmap --json`: source tokens, one row per
/// step with its output token and every weight, the entropies, all as f32 bit for bit;
/// the step control at the last step.
fn check_heatmap(word: &str, shown: &Shown, want: &Heatmap) {
    assert_eq!(shown.src, want.source, "{word}: #heatmap's source tokens");
    assert_eq!(
        shown.rows.len(),
        want.output.len(),
        "{word}: #heatmap's rows (one per step, the end token's included)"
    );
    for (i, (row, (token, weights))) in shown
        .rows
        .iter()
        .zip(want.output.iter().zip(&want.weights))
        .enumerate()
    {
        assert_eq!(
            row.step.as_deref(),
            Some(i.to_string().as_str()),
            "{word}: row {i}'s data-step"
        );
        assert_eq!(
            row.out,
            std::slice::from_ref(token),
            "{word}: row {i}'s th.out is not the output token (s2s heatmap --json's, as it is)"
        );
        assert_eq!(row.w.len(), weights.len(), "{word}: row {i}'s cells");
        for (j, (w, want)) in row.w.iter().zip(weights).enumerate() {
            let got = page_f32(
                w.as_deref(),
                &format!("{word}: row {i}, column {j}: data-w"),
            );
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{word}: row {i}, column {j}: data-w {w:?} is {got}, s2s heatmap's {want}"
            );
        }
    }
    assert_eq!(
        shown.entropy.len(),
        want.entropy.len(),
        "{word}: #entropy's bars (one per step)"
    );
    for (i, ((step, e), want)) in shown.entropy.iter().zip(&want.entropy).enumerate() {
        assert_eq!(
            step.as_deref(),
            Some(i.to_string().as_str()),
            "{word}: bar {i}'s data-step"
        );
        let got = page_f32(e.as_deref(), &format!("{word}: bar {i}: data-entropy"));
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "{word}: step {i}: data-entropy {e:?} is {got}, s2s heatmap's {want}"
        );
    }
    check_step(word, shown, want.output.len() - 1, want.output.len());
}

/// The step control, the rows' classes and the label at step `s` of `n`, and the next
/// tokens: five, most probable first, each in [0, 1].
fn check_step(word: &str, shown: &Shown, s: usize, n: usize) {
    assert_eq!(shown.step, s.to_string(), "{word}: #step's value");
    assert_eq!(shown.min, "0", "{word}: #step's min");
    assert_eq!(shown.max, (n - 1).to_string(), "{word}: #step's max");
    assert_eq!(
        shown.label,
        format!("step {} of {n}", s + 1),
        "{word}: #step-label"
    );
    for (i, row) in shown.rows.iter().enumerate() {
        assert_eq!(
            row.current,
            i == s,
            "{word}: row {i}'s class current at step {s}"
        );
        assert_eq!(
            row.future,
            i > s,
            "{word}: row {i}'s class future at step {s}"
        );
    }
    assert_eq!(
        shown.topk.len(),
        5,
        "{word}: #topk at step {s}: {:?}",
        shown.topk
    );
    let mut last = f32::INFINITY;
    for (id, p) in &shown.topk {
        assert!(
            id.as_deref().is_some_and(|id| id.parse::<u32>().is_ok()),
            "{word}: #topk's data-id {id:?}"
        );
        let p = page_f32(p.as_deref(), &format!("{word}: #topk's data-p"));
        assert!((0.0..=1.0).contains(&p), "{word}: #topk's data-p {p}");
        assert!(
            p <= last,
            "{word}: #topk is not most probable first: {:?}",
            shown.topk
        );
        last = p;
    }
}

/// The first `WORDS` golden evaluation words netra takes.
fn words() -> Vec<String> {
    eval_words(WORDS, NETRA_MAX_LEN)
}

// -------------------------------------------------------------------------------------
// The tests

/// Served by `s2s explore` with netra w8a16: 20 words typed show `s2s run`'s outputs
/// and `s2s heatmap --json`'s attention; the step buttons; a beam of 3; g2p-en (no
/// attention) dropped on it; a damaged file dropped on it; a screenshot.
#[test]
fn the_served_page_shows_what_s2s_computes() {
    let dir = prerequisites();
    let scratch = scratch_dir("explorer-served");
    let netra = model_file("netra-w8a16.s2s");
    let g2p = model_file("g2p-en.s2s");
    let words = words();

    // What s2s computes, first (the browser is not kept waiting).
    let texts = run_tsv(&netra, &words, &[]);
    let ids = run_ids(&netra, &words);
    let maps: Vec<Heatmap> = words.iter().map(|w| heatmap(&netra, w)).collect();
    let beams = run_tsv(&netra, &words, &["--beam", "3"]);
    let g2p_texts = run_tsv(&g2p, &words, &[]);

    let (_server, url) = serve(&netra, &dir, &scratch);
    let browser = Browser::start(&scratch);
    browser.navigate(&url);
    browser.wait_ready("netra-w8a16.s2s");

    // 1. The board plans: every board has a RAM plan.
    let boards = browser.js(
        "return Array.from(document.querySelectorAll('#board option')).map((o) => o.value);",
        json!([]),
    );
    let boards: Vec<String> = serde_json::from_value(boards).expect("board names");
    assert!(!boards.is_empty(), "#board has no boards");
    for b in &boards {
        let bytes = browser.js(
            "const s = document.getElementById('board'); s.value = arguments[0]; \
             s.dispatchEvent(new Event('change', { bubbles: true })); \
             return document.getElementById('plan').dataset.bytes;",
            json!([b]),
        );
        let bytes: u64 = bytes
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("#plan's data-bytes for {b}: {bytes}"));
        assert!(bytes > 0, "#plan's data-bytes is 0 for board {b}");
    }

    // 2. Twenty words, each as s2s computes it.
    for (k, word) in words.iter().enumerate() {
        browser.type_word(word);
        let shown = browser.shown();
        assert_eq!(
            shown.source.as_deref(),
            Some(word.as_str()),
            "#output's data-source"
        );
        assert_eq!(
            shown.state.as_deref(),
            Some("ok"),
            "{word}: #output's data-state ({})",
            shown.error
        );
        assert_eq!(shown.output, texts[k], "{word}: #output is not s2s run's");
        assert_eq!(
            shown.ids.as_deref(),
            Some(ids[k].as_str()),
            "{word}: #output's data-ids"
        );
        check_heatmap(word, &shown, &maps[k]);
    }

    // 3. Steps back to the first (and no further), then forward to the last.
    let (k, word) = words
        .iter()
        .enumerate()
        .max_by_key(|(k, _)| maps[*k].output.len())
        .expect("words");
    browser.type_word(word);
    let n = maps[k].output.len();
    assert!(n >= 3, "{word}: too few steps ({n}) to step through");
    let id_list: Vec<&str> = ids[k].split_whitespace().collect();
    // One click of `button`, which must select step `s` (and change #topk if it moved).
    let mut seen = browser.shown();
    let mut click = |button: &str, s: usize| {
        browser.click(button);
        let shown = browser.shown();
        check_step(word, &shown, s, n);
        if seen.step != shown.step {
            assert_ne!(
                shown.topk, seen.topk,
                "{word}: #topk did not change from step {} to {s}",
                seen.step
            );
        }
        seen = shown.clone();
        shown
    };
    for s in (0..n - 1).rev().chain([0]) {
        let shown = click("#step-back", s);
        // Greedy: the most probable next token is the one output.
        if let Some(id) = id_list.get(s) {
            assert_eq!(
                shown.topk[0].0.as_deref(),
                Some(*id),
                "{word}: step {s}: #topk's first is not the output's token"
            );
        }
    }
    for s in (1..n).chain([n - 1]) {
        click("#step-forward", s);
    }
    // Replay: back to the first step at once, then row by row to the last.
    browser.click("#play");
    let first = browser.shown();
    assert!(
        first.step.parse::<usize>().is_ok_and(|s| s < n - 1),
        "{word}: replay did not start from an early step ({})",
        first.step
    );
    browser.wait(
        &format!("document.getElementById('step').value === '{}'", n - 1),
        "the replay reaching the last step",
    );
    check_step(word, &browser.shown(), n - 1, n);

    // 8. The screenshot: a netra word with its heatmap (in the Khmer font).
    browser.js("return document.fonts.ready.then(() => true);", json!([]));
    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    let shot = dir.join("screenshot.png");
    std::fs::write(&shot, &png).unwrap_or_else(|e| panic!("{}: {e}", shot.display()));
    eprintln!("explorer: {} ({} bytes)", shot.display(), png.len());

    // 4. A beam of 3 (on a word whose beam output differs from its greedy one, if any):
    // changing #beam decodes again.
    let k = (0..words.len())
        .find(|&k| beams[k] != texts[k])
        .unwrap_or(0);
    let word = &words[k];
    browser.type_word(word);
    browser.clear("#beam");
    // Whatever clearing it decoded is done: the next data-source is the beam's.
    browser.js(
        "document.getElementById('output').removeAttribute('data-source');",
        json!([]),
    );
    browser.send_keys("#beam", "3");
    browser.wait(
        &format!(
            "document.getElementById('beam').value === '3' && \
             document.getElementById('output').dataset.source === {}",
            json!(word)
        ),
        &format!("the beam-3 decode of {word:?}"),
    );
    let shown = browser.shown();
    assert_eq!(
        shown.output, beams[k],
        "{word}: #output with beam 3 is not s2s run --beam 3's"
    );
    assert!(
        !shown.hyps.is_empty(),
        "{word}: #beam-view has no .hyp with beam 3"
    );
    for (tokens, class) in &shown.hyps {
        assert!(tokens.is_some(), "{word}: a .hyp without data-tokens");
        assert!(
            ["live", "finished", "pruned"]
                .iter()
                .any(|c| class.split_whitespace().any(|k| k == *c)),
            "{word}: .hyp's class {class:?} is none of live, finished, pruned"
        );
    }
    eprintln!(
        "explorer: beam 3 on {word:?}: {:?} (greedy {:?}); #beam-view: {:?}",
        beams[k], texts[k], shown.hyps
    );
    browser.clear("#beam");
    browser.send_keys("#beam", "1");

    // 5. g2p-en (f32, no attention) dropped on the page.
    let bytes = std::fs::read(&g2p).expect("reading g2p-en.s2s");
    browser.drop_file("g2p-en.s2s", &bytes);
    browser.wait_ready("g2p-en.s2s");
    for (k, word) in words.iter().enumerate() {
        browser.type_word(word);
        let shown = browser.shown();
        assert_eq!(
            shown.state.as_deref(),
            Some("ok"),
            "g2p-en {word}: #output's data-state ({})",
            shown.error
        );
        assert_eq!(
            shown.output, g2p_texts[k],
            "g2p-en {word}: #output is not s2s run's"
        );
        assert!(
            shown.rows.is_empty(),
            "g2p-en {word}: #heatmap has rows without attention"
        );
        assert_eq!(
            shown.none.as_deref(),
            Some("1"),
            "g2p-en {word}: #heatmap's data-none"
        );
    }

    // 6. A damaged netra file: an error naming it; g2p-en stays loaded.
    let mut bytes = std::fs::read(&netra).expect("reading netra-w8a16.s2s");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let damaged = "damaged-netra-w8a16.s2s";
    browser.drop_file(damaged, &bytes);
    browser.wait(
        "document.getElementById('status').dataset.state === 'error'",
        "#status error for the damaged file",
    );
    let status = browser.js(
        "return document.getElementById('status').textContent;",
        json!([]),
    );
    let status = status.as_str().unwrap_or_default();
    assert!(
        status.contains(damaged),
        "#status does not name {damaged}: {status:?}"
    );
    assert_eq!(
        status.trim().lines().count(),
        1,
        "#status is not one line: {status:?}"
    );
    let word = &words[1];
    browser.type_word(word);
    let shown = browser.shown();
    assert_eq!(
        shown.output, g2p_texts[1],
        "{word}: after the damaged file, not g2p-en's output"
    );
    assert_eq!(
        browser.js(
            "return document.getElementById('model-name').textContent;",
            json!([])
        ),
        "g2p-en.s2s",
        "#model-name after the damaged file"
    );
}

/// Opened from disk (a `file://` address, where no `.wasm` can be fetched): netra w8a16
/// dropped on it decodes a word as `s2s run` does; netra f32 chosen through
/// `#model-input` too.
#[test]
fn the_page_opened_from_disk_takes_a_dropped_model() {
    let dir = prerequisites();
    let scratch = scratch_dir("explorer-disk");
    let netra = model_file("netra-w8a16.s2s");
    let netra_f32 = model_file("netra.s2s");
    let words: Vec<String> = words().into_iter().take(3).collect();
    let texts = run_tsv(&netra, &words, &[]);
    let f32_texts = run_tsv(&netra_f32, &words, &[]);
    let map = heatmap(&netra, &words[0]);

    let browser = Browser::start(&scratch);
    let index = dir.join("index.html");
    let index = index.canonicalize().unwrap_or(index);
    browser.navigate(&format!("file://{}", index.display()));
    browser.wait(
        "document.getElementById('status').dataset.state === 'empty'",
        "#status empty (no model yet)",
    );
    // The Khmer font of pkg/fonts.css loads from disk (a data: URL).
    let faces = browser.js(
        "return document.fonts.load('16px \"Noto Sans Khmer\"', '\\u1780').then((f) => f.length);",
        json!([]),
    );
    assert!(
        faces.as_u64().is_some_and(|n| n >= 1),
        "the page opened from disk has no Noto Sans Khmer (pkg/fonts.css): {faces}"
    );

    let bytes = std::fs::read(&netra).expect("reading netra-w8a16.s2s");
    browser.drop_file("netra-w8a16.s2s", &bytes);
    browser.wait_ready("netra-w8a16.s2s");
    browser.type_word(&words[0]);
    let shown = browser.shown();
    assert_eq!(
        shown.output, texts[0],
        "{}: #output is not s2s run's",
        words[0]
    );
    check_heatmap(&words[0], &shown, &map);

    // A source the model cannot take (longer than netra's fixed length): an error of
    // one line, like s2s run's; then a word decodes again.
    let long = "a".repeat(NETRA_MAX_LEN + 3);
    let out = s2s_tests::s2s(&[&"run", &netra], &format!("{long}\n"));
    assert!(!out.status.success(), "s2s run takes {long:?}");
    browser.type_word(&long);
    let shown = browser.shown();
    assert_eq!(
        shown.state.as_deref(),
        Some("error"),
        "{long:?}: #output's data-state"
    );
    assert!(
        !shown.error.trim().is_empty() && shown.error.trim().lines().count() == 1,
        "{long:?}: #source-error is not one line: {:?}",
        shown.error
    );
    assert!(
        shown.output.is_empty(),
        "{long:?}: #output is not empty: {:?}",
        shown.output
    );
    browser.type_word(&words[1]);
    assert_eq!(
        browser.shown().output,
        texts[1],
        "{}: after the error",
        words[1]
    );

    // The file input: netra f32.
    browser.send_keys("#model-input", &netra_f32.display().to_string());
    browser.wait_ready("netra.s2s");
    for (k, word) in words.iter().enumerate() {
        browser.type_word(word);
        let shown = browser.shown();
        assert_eq!(
            shown.output, f32_texts[k],
            "netra f32 {word}: #output is not s2s run's"
        );
    }
}

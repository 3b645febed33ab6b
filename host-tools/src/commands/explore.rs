//! `s2s explore`: the attention explorer's page (built by `cargo xtask explorer`) served
//! on 127.0.0.1 with one model, which the page loads at start.
//!
//! The page itself needs no server (it can be opened from disk and a model dropped
//! in); this serves it with a model so that one command opens a model in it. Each
//! connection gets a thread and one answer, then is closed; a request's head is parsed
//! by `httparse` and only GET requests for the page's own files, `model.s2s` and
//! `explore.json` are answered.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::LoadedModel;

/// The longest request head read (the page's requests are a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;

/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the page is looked for without `--dir`: `S2S_EXPLORER_DIR`, else
/// `target/explorer/` of the checkout s2s was built from.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("S2S_EXPLORER_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/explorer"),
    }
}

/// What is served: the page's folder, the model's bytes and `explore.json`.
struct Site {
    dir: PathBuf,
    model: Vec<u8>,
    meta: String,
}

/// Serves the page in `dir` with `model` on 127.0.0.1:`port` (0: any free port),
/// printing `serving http://127.0.0.1:PORT/ ...` on `out` first; runs until killed.
pub fn explore(model: &Path, dir: &Path, port: u16, out: &mut dyn Write) -> Result {
    let loaded = LoadedModel::load(model)?;
    if !dir.join("index.html").is_file() {
        return Err(Error::usage(format!(
            "no explorer page in {}: build it with `cargo xtask explorer` (or give --dir, or set S2S_EXPLORER_DIR)",
            dir.display()
        )));
    }
    let name = model
        .file_name()
        .map_or("model.s2s".into(), |n| n.to_string_lossy().to_string());
    let listener = TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Error::usage(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    let port = listener.local_addr().map_or(port, |a| a.port());
    writeln!(
        out,
        "serving http://127.0.0.1:{port}/ ({name}; Ctrl-C stops)"
    )
    .and_then(|()| out.flush())
    .map_err(Error::io(crate::io::STDOUT_NAME))?;
    let site = Arc::new(Site {
        dir: dir.to_path_buf(),
        model: loaded.bytes().to_vec(),
        meta: serde_json::json!({ "name": name }).to_string(),
    });
    for stream in listener.incoming().flatten() {
        let site = Arc::clone(&site);
        std::thread::spawn(move || serve(stream, &site));
    }
    Ok(())
}

/// One connection: its request read and answered, then closed. A browser that went
/// away is no reason to stop serving, so write errors are dropped.
fn serve(mut stream: TcpStream, site: &Site) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut head = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let (status, kind, body) = loop {
        let n = match stream.read(&mut head[len..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head[..len]) {
            Ok(httparse::Status::Complete(_)) => {
                let method = request.method.unwrap_or("");
                break answer(method, request.path.unwrap_or("/"), site);
            }
            Ok(httparse::Status::Partial) if len < head.len() => continue,
            _ => break (400, "text/plain", b"bad request\n".to_vec()),
        }
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(header.as_bytes())
        .and_then(|()| stream.write_all(&body));
}

/// The status, content type and body answering `method path`.
fn answer(method: &str, path: &str, site: &Site) -> (u16, &'static str, Vec<u8>) {
    if method != "GET" {
        return (405, "text/plain", b"GET only\n".to_vec());
    }
    let path = path.split(['?', '#']).next().unwrap_or("/");
    match path {
        "/model.s2s" => return (200, "application/octet-stream", site.model.clone()),
        "/explore.json" => return (200, "application/json", site.meta.as_bytes().to_vec()),
        _ => {}
    }
    let rel = match path.trim_start_matches('/') {
        "" => "index.html",
        p => p,
    };
    // The page's own files only: plain names below the folder, no way up.
    let plain = rel
        .split('/')
        .all(|part| !part.is_empty() && part != ".." && part != "." && !part.contains('\\'));
    let file = site.dir.join(rel);
    match std::fs::read(&file) {
        Ok(body) if plain => (200, content_type(&file), body),
        _ => (
            404,
            "text/plain",
            format!("not found: {path}\n").into_bytes(),
        ),
    }
}

/// The content type of a file of the page, by its extension.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_its_files_and_the_model_are_served_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("s2s-explore-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("index.html"), "<html>").unwrap();
        std::fs::write(dir.join("pkg/a.js"), "js").unwrap();
        let site = Site {
            dir: dir.clone(),
            model: b"MODEL".to_vec(),
            meta: "{\"name\":\"m.s2s\"}".into(),
        };
        let get = |path: &str| answer("GET", path, &site);
        assert_eq!(
            get("/"),
            (200, "text/html; charset=utf-8", b"<html>".to_vec())
        );
        let (status, kind, _) = get("/pkg/a.js?x=1");
        assert_eq!((status, kind), (200, "text/javascript; charset=utf-8"));
        assert_eq!(get("/model.s2s").2, b"MODEL");
        assert_eq!(get("/explore.json").2, b"{\"name\":\"m.s2s\"}");
        for outside in [
            "/../secret",
            "/pkg/../../secret",
            "//etc/passwd",
            "/missing.js",
        ] {
            assert_eq!(get(outside).0, 404, "{outside}");
        }
        assert_eq!(answer("POST", "/", &site).0, 405);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_connection_is_answered_and_closed_even_while_others_stay_open() {
        let dir = std::env::temp_dir().join(format!("s2s-explore-conn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), "<html>").unwrap();
        let site = Arc::new(Site {
            dir: dir.clone(),
            model: Vec::new(),
            meta: String::new(),
        });
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let serving = Arc::clone(&site);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let site = Arc::clone(&serving);
                std::thread::spawn(move || serve(stream, &site));
            }
        });
        // Eight idle connections (a browser's), then a request on a ninth.
        let idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut reply = String::new();
        c.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.contains("Connection: close\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\n<html>"), "{reply}");
        drop(idle);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! `report.html` in a real headless browser (Debian's chromium): the demo run's page renders
//! with no script error and no console message, its script runs to the end, a screenshot of it
//! is kept in `target/report-screenshot.png` (CI keeps it), and it fits a 1280-pixel-wide
//! window without scrolling sideways.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

const CHROMIUM: &str = "/usr/bin/chromium";
const WIDTH: u32 = 1400;
const HEIGHT: u32 = 2400;

/// Runs headless chromium on `page` with `args`, logging the page's console to stderr, with
/// its own profile directory; killed after two minutes.
fn chromium(page: &Path, profile: &Path, args: &[String]) -> Output {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the report.html browser test needs Debian's chromium; run \
         scripts/install-browser"
    );
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Drained while it runs: a full pipe would stall it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("chromium runs") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 2 minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// The lines of chromium's log that come from the page: console messages and uncaught errors.
fn console_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect()
}

/// Width and height from a PNG's IHDR chunk, after checking the signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(
        bytes.len() > 24 && bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR",
        "not a PNG"
    );
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_demo_report_renders_in_headless_chromium_without_errors() {
    let tmp = temp_dir();
    let run = tmp.path().join("run");
    let out = mcpeval(&["run", "--out", run.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the demo's candidate regresses: {}",
        text(&out)
    );
    let page = run.join("report.html");
    let html = std::fs::read_to_string(&page).expect("the run wrote report.html");
    assert!(
        (20_000..3_000_000).contains(&html.len()),
        "report.html is {} bytes",
        html.len()
    );
    assert!(html.contains("diverged here"), "no divergence marked");

    // The DOM after the page's script ran: the marker it sets last, no recorded error, and the
    // trial chooser's work (every pair but the first of each task hidden).
    let profile = tmp.path().join("profile");
    let dom = chromium(&page, &profile, &["--dump-dom".into()]);
    assert!(dom.status.success(), "chromium --dump-dom failed: {dom:?}");
    let text = String::from_utf8_lossy(&dom.stdout);
    let at = text.find("<html").expect("a DOM was dumped");
    let root = &text[at..at + text[at..].find('>').unwrap()];
    assert!(
        root.contains("data-report-ready=\"yes\""),
        "the page's script did not finish: {root}"
    );
    assert!(
        !root.contains("data-js-errors="),
        "script errors: {root} {}",
        text.split("<pre id=\"js-errors\"").nth(1).unwrap_or("")
    );
    assert!(text.contains("<pre id=\"js-errors\" hidden=\"\"></pre>"));
    let alternatives = text.matches("data-alt=\"1\"").count();
    assert!(alternatives > 0, "no task has a second trial pair");
    assert_eq!(
        text.matches("data-alt=\"1\" hidden=\"\"").count(),
        alternatives,
        "the trial chooser did not hide the other pairs"
    );
    assert_eq!(console_lines(&dom), Vec::<String>::new(), "console output");

    // The screenshot CI keeps.
    let shot: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "target",
        "report-screenshot.png",
    ]
    .iter()
    .collect();
    let _ = std::fs::remove_file(&shot);
    let taken = chromium(
        &page,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={WIDTH},{HEIGHT}"),
            "--hide-scrollbars".into(),
        ],
    );
    assert!(
        taken.status.success(),
        "chromium --screenshot failed: {taken:?}"
    );
    assert_eq!(
        console_lines(&taken),
        Vec::<String>::new(),
        "console output"
    );
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert_eq!(png_size(&png), (WIDTH, HEIGHT));
    assert!(
        png.len() > 50_000,
        "a {} byte screenshot is too small to show the page",
        png.len()
    );
}

/// Added to a copy of the page after its own script: writes the document's scroll width, its
/// client width (the window's less a vertical scrollbar) and the window's width onto `<html>`,
/// and the elements that reach past the client area's right edge into `<pre id="width-probe">`.
const WIDTH_PROBE: &str = "<script>(function () {
  var root = document.documentElement, wide = [];
  document.querySelectorAll('body *').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > root.clientWidth + 0.5 && wide.length < 12) {
      wide.push(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
        (e.className && e.className.baseVal === undefined ? '.' + e.className : '') +
        ' right=' + Math.round(r.right) + ': ' + (e.textContent || '').slice(0, 60));
    }
  });
  root.setAttribute('data-scroll-width', String(root.scrollWidth));
  root.setAttribute('data-client-width', String(root.clientWidth));
  root.setAttribute('data-inner-width', String(window.innerWidth));
  var pre = document.createElement('pre');
  pre.id = 'width-probe';
  pre.textContent = wide.join('\\n');
  document.body.appendChild(pre);
})();</script>";

/// The value of `name="…"` in the `<html …>` tag of a dumped DOM.
fn root_attribute(dom: &str, name: &str) -> Option<u32> {
    let at = dom.find("<html")?;
    let root = &dom[at..at + dom[at..].find('>')?];
    let pat = format!("{name}=\"");
    let rest = &root[root.find(&pat)? + pat.len()..];
    rest[..rest.find('"')?].parse().ok()
}

/// The text of each `<th>` of the verdict table's head, tags dropped.
fn verdict_headers(html: &str) -> Vec<String> {
    let table = &html[html
        .find("<table id=\"verdicts\">")
        .expect("a verdict table")..];
    let head = &table[..table.find("</thead>").expect("a table head")];
    head.split("<th>")
        .skip(1)
        .map(|cell| {
            let cell = &cell[..cell.find("</th>").unwrap_or(cell.len())];
            let mut text = String::new();
            let mut in_tag = false;
            for ch in cell.chars() {
                match ch {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            text.trim().to_owned()
        })
        .collect()
}

#[test]
fn the_demo_report_fits_1280_pixels_without_scrolling_sideways() {
    let tmp = temp_dir();
    let run = tmp.path().join("run");
    let out = mcpeval(&["run", "--out", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let html = std::fs::read_to_string(run.join("report.html")).expect("the run wrote report.html");

    // No two columns side by side under the same header (the trials passed, then the success
    // metric's verdict).
    let headers = verdict_headers(&html);
    assert!(headers.len() >= 4, "{headers:?}");
    for pair in headers.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "two adjacent columns headed alike: {headers:?}"
        );
    }

    let end = html.rfind("</body>").expect("the page ends its body");
    let probe = run.join("width-probe.html");
    std::fs::write(
        &probe,
        format!("{}{WIDTH_PROBE}\n{}", &html[..end], &html[end..]),
    )
    .unwrap();
    let dom = chromium(
        &probe,
        &tmp.path().join("profile"),
        &["--window-size=1280,800".into(), "--dump-dom".into()],
    );
    assert!(dom.status.success(), "chromium --dump-dom failed: {dom:?}");
    let text = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(
        root_attribute(&text, "data-inner-width"),
        Some(1280),
        "the window is not 1280 pixels wide"
    );
    let width = root_attribute(&text, "data-scroll-width").expect("the probe ran");
    let client = root_attribute(&text, "data-client-width").expect("the probe ran");
    let wide = text
        .split("<pre id=\"width-probe\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or("");
    assert!(
        width <= 1280 && width <= client,
        "report.html is {width} pixels wide in a 1280-pixel window ({client} inside its \
         scrollbar); past the right edge:\n{wide}"
    );
}

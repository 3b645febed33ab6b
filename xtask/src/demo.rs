//! `cargo xtask demo`: both models on the QEMU boards, each run checked token by token
//! against the host, then an attention heatmap in the terminal.

use std::process::Command;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::files::write;

impl Ctx {
    /// `cargo xtask demo`: `setup`, `models`, then the runs (see the module docs).
    pub(crate) fn demo(&self) -> Result {
        // The demo needs no browser and no WebAssembly tools.
        self.setup_for(false)?;
        self.models()?;
        println!("==> demo");
        let models = self.models_dir();
        let demo = self.target.join("demo");
        std::fs::create_dir_all(&demo).map_err(Error::io(&demo))?;
        // The word lists (also the README's, checked by tests/tests/readme.rs).
        let netra_words = demo.join("netra-words.txt");
        write(
            &netra_words,
            include_str!("../../tests/fixtures/demo/netra-words.txt"),
        )?;
        let g2p_words = demo.join("g2p-en-words.txt");
        write(
            &g2p_words,
            include_str!("../../tests/fixtures/demo/g2p-en-words.txt"),
        )?;
        let s2s = self.s2s();
        // The last run decodes with netra's own beam search (its `transliterate()`).
        let greedy: &[&str] = &[];
        let runs = [
            (
                "netra-w8a16.s2s",
                "lm3s6965evb",
                "Cortex-M3",
                &netra_words,
                greedy,
            ),
            (
                "netra-w8a16.s2s",
                "microbit",
                "Cortex-M0",
                &netra_words,
                greedy,
            ),
            (
                "netra.s2s",
                "mps2-an386",
                "Cortex-M4F",
                &netra_words,
                greedy,
            ),
            (
                "g2p-en-w8a16.s2s",
                "mps2-an386",
                "Cortex-M4F",
                &g2p_words,
                greedy,
            ),
            (
                "netra-w8a16.s2s",
                "lm3s6965evb",
                "Cortex-M3",
                &netra_words,
                &["--beam", "3"],
            ),
        ];
        let mut failed = vec![];
        for (model, board, cpu, words, search) in runs {
            let model = models.join(model);
            let how = match search {
                [] => String::new(),
                _ => format!(", {}", search.join(" ")),
            };
            println!("\n--- {} on {board} ({cpu}{how}) ---", self.show(&model));
            // The outputs, from the host run of the same core; `s2s qemu` then runs the
            // words on the board and checks every token against the host.
            self.run(
                Command::new(&s2s)
                    .arg("run")
                    .arg(&model)
                    .arg("--input")
                    .arg(words)
                    .arg("--tsv")
                    .args(search),
            )?;
            // A board that fails does not stop the others; the demo fails at the end.
            if let Err(e) = self.run(
                Command::new(&s2s)
                    .arg("qemu")
                    .arg(&model)
                    .args(["--board", board, "--input"])
                    .arg(words)
                    .args(search),
            ) {
                eprintln!("xtask: error: {e}");
                failed.push(format!("{} on {board}", self.show(&model)));
            }
        }

        println!("\n--- attention of netra on one word ---");
        self.run(
            Command::new(&s2s)
                .arg("heatmap")
                .arg(models.join("netra.s2s"))
                .arg("angkor"),
        )?;
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!("the QEMU run failed for {}", failed.join(", ")).into())
        }
    }
}

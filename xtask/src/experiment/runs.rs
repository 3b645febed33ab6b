//! The training runs of the experiments: configuration, data, seed, options and the
//! time each is sized for.

/// One training run.
pub struct Run {
    /// Its name: the stage, and the files `target/experiments/<name>.*`.
    pub name: &'static str,
    /// The model configuration, from the repository root; or with `init`, the model
    /// file in the target directory it starts from (`s2s train --init`).
    pub config: &'static str,
    /// Whether `config` is a model file to start from (`--init`).
    pub init: bool,
    /// The training and validation files' names in `data` (`train`, `valid`).
    pub split: (&'static str, &'static str),
    /// The data directory in `target/experiments/` (`train.tsv`, `valid.tsv`, `test.tsv`).
    pub data: &'static str,
    /// `--seed`.
    pub seed: u64,
    /// Further `s2s train` options.
    pub args: &'static [&'static str],
    /// Options beside `args` (quantization-aware training, the tries of a setting); an
    /// option given here replaces the same option of `args` ([`Run::options`]).
    pub extra: &'static [&'static str],
    /// `--threads`: 1 for the experiments' runs, which go two side by side on the 2
    /// cores (measured on CMUdict: a second thread makes one run only 14 % faster, so
    /// two one-thread runs do 1.7 times the work of one two-thread run).
    pub threads: u32,
    /// Minutes of training it is sized for, on one core (`threads` 1) or all.
    pub budget_minutes: u32,
}

/// The options of every CMUdict run.
const CMUDICT: &[&str] = &[
    "--epochs",
    "25",
    "--batch",
    "64",
    "--lr",
    "0.001",
    "--lr-decay",
    "0.5",
    "--clip",
    "1",
    "--dropout",
    "0.2",
    "--patience",
    "4",
    "--quiet",
];

/// The options of both length-task runs. 40 epochs: at 12 the vanilla model's loss
/// was still falling steadily (2.34 -> 2.31 in the last two epochs) after 6 of its 60
/// minutes.
const LENGTH: &[&str] = &[
    "--epochs",
    "40",
    "--batch",
    "64",
    "--lr",
    "0.002",
    "--lr-decay",
    "0.5",
    "--clip",
    "1",
    "--dropout",
    "0",
    "--patience",
    "3",
    "--quiet",
];

/// The running-text runs (issue 29): 20,000 sentences of 20-200 characters, about 9.6
/// minutes per epoch on one core for the global model (28.8 s per 1,000 sentences at
/// batch 32, measured), so six epochs. Batches of 32: with 64 (312 updates an epoch)
/// the first epoch left the validation loss at 2.58 and the token error rate at 229 %.
const RUNNING_TEXT: &[&str] = &[
    "--epochs",
    "6",
    "--batch",
    "32",
    "--lr",
    "0.002",
    "--lr-decay",
    "0.5",
    "--clip",
    "1",
    "--dropout",
    "0.1",
    "--patience",
    "2",
    "--quiet",
];

/// Quantization-aware fine-tuning of g2p-en: a few epochs at a small learning rate
/// from the published weights.
const QAT_G2P_EN: &[&str] = &[
    "--epochs",
    "4",
    "--batch",
    "64",
    "--lr",
    "0.0002",
    "--lr-decay",
    "0.5",
    "--clip",
    "1",
    "--patience",
    "2",
    "--quiet",
];

/// Every run.
pub const RUNS: &[Run] = &[
    cmudict(
        "cmudict-vanilla",
        "models/experiments/cmudict-vanilla.toml",
        &[],
        1,
        90,
    ),
    cmudict(
        "cmudict-bahdanau",
        "models/experiments/cmudict-bahdanau.toml",
        &[],
        1,
        90,
    ),
    cmudict(
        "cmudict-luong",
        "models/experiments/cmudict-luong.toml",
        &[],
        1,
        90,
    ),
    Run {
        name: "length-vanilla",
        config: "models/experiments/length-vanilla.toml",
        data: "length",
        init: false,
        split: ("train", "valid"),
        seed: 2,
        args: LENGTH,
        extra: &[],
        threads: 1,
        budget_minutes: 60,
    },
    Run {
        name: "length-bahdanau",
        config: "models/experiments/length-bahdanau.toml",
        data: "length",
        init: false,
        split: ("train", "valid"),
        seed: 2,
        args: LENGTH,
        extra: &[],
        threads: 1,
        budget_minutes: 60,
    },
    Run {
        name: "dates",
        config: "models/train/dates.toml",
        data: "dates",
        init: false,
        split: ("train", "valid"),
        seed: 3,
        args: &[
            "--epochs",
            "30",
            "--batch",
            "64",
            "--lr",
            "0.003",
            "--lr-decay",
            "0.5",
            "--clip",
            "1",
            "--dropout",
            "0.1",
            "--patience",
            "5",
            "--quiet",
        ],
        extra: &[],
        threads: 0,
        budget_minutes: 15,
    },
    // The global-attention baseline of running text (issue 29), on one core.
    Run {
        name: "running-text-global",
        config: "models/experiments/running-text-global.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 60,
    },
    // Hard monotonic attention on the same data, shapes, options and seed (issue 29).
    Run {
        name: "running-text-monotonic",
        config: "models/experiments/running-text-monotonic.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 60,
    },
    // The streaming model of running text (issue 29): monotonic over a unidirectional
    // encoder, micro:bit-sized, on the same data, options and seed.
    Run {
        name: "running-text-stream",
        config: "models/experiments/running-text-stream.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 45,
    },
    // The MoChA streaming model (issue 29): the streaming model with a chunk of 4.
    Run {
        name: "running-text-mocha",
        config: "models/experiments/running-text-mocha.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 45,
    },
    // The local-m streaming model (issue 29): the streaming model with local attention,
    // a window of 65 positions around the step's index, instead of monotonic attention.
    Run {
        name: "running-text-local",
        config: "models/experiments/running-text-local.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 60,
    },
    // The local-p model (issue 29): the local-m model with the window's centre predicted
    // from the decoder state and the Gaussian weighting; it does not stream.
    Run {
        name: "running-text-local-p",
        config: "models/experiments/running-text-local-p.toml",
        data: "running-text",
        init: false,
        split: ("train", "valid"),
        seed: 4,
        args: RUNNING_TEXT,
        extra: &[],
        threads: 1,
        budget_minutes: 70,
    },
    Run {
        name: "qat-g2p-en",
        config: "models/g2p-en.s2s",
        init: true,
        data: "cmudict",
        split: ("train-g2p-en", "valid-g2p-en"),
        seed: 1,
        args: QAT_G2P_EN,
        extra: &["--quantize", "w8a16"],
        threads: 1,
        budget_minutes: 45,
    },
    // (The CMUdict runs' dropout does not apply: the integer model has none.)
    // All cores: its integer runs share out over the threads (the f32 runs went two
    // side by side with one thread each).
    cmudict(
        "qat-cmudict-bahdanau",
        "models/experiments/cmudict-bahdanau.toml",
        &["--quantize", "w8a16"],
        0,
        90,
    ),
    // Tries at a test PER of at most 9 % for the Bahdanau model (issue 33): its run
    // with label smoothing.
    cmudict(
        "try-cmudict-bahdanau-ls",
        "models/experiments/cmudict-bahdanau.toml",
        &["--label-smoothing", "0.1"],
        1,
        90,
    ),
    // The same with dropout 0.3 instead of 0.2: the f32 run's validation loss stopped
    // falling at epoch 18 while its training loss kept falling.
    // (Its first 19 epochs ran on all cores; the rest with one thread, beside the
    // other tries.)
    cmudict(
        "try-cmudict-bahdanau-dropout",
        "models/experiments/cmudict-bahdanau.toml",
        &["--dropout", "0.3"],
        1,
        60,
    ),
    // The model one eighth wider in every layer (925 k parameters, under the 1 M of
    // experiment 1).
    cmudict(
        "try-cmudict-bahdanau-wide",
        "models/experiments/cmudict-bahdanau-wide.toml",
        &[],
        1,
        120,
    ),
];

/// A run on the CMUdict split (`train`, `valid`) with the CMUdict runs' options and
/// seed 1: its name, configuration, further options, threads and budget.
const fn cmudict(
    name: &'static str,
    config: &'static str,
    extra: &'static [&'static str],
    threads: u32,
    budget_minutes: u32,
) -> Run {
    Run {
        name,
        config,
        init: false,
        data: "cmudict",
        split: ("train", "valid"),
        seed: 1,
        args: CMUDICT,
        extra,
        threads,
        budget_minutes,
    }
}

impl Run {
    /// The `s2s train` options: `extra`, then `args` without the options `extra` gives
    /// (each with its value).
    pub fn options(&self) -> Vec<&'static str> {
        let mut out = self.extra.to_vec();
        let mut args = self.args.iter().peekable();
        while let Some(&a) = args.next() {
            if self.extra.contains(&a) && a.starts_with("--") {
                // Its value too, if it has one.
                args.next_if(|v| !v.starts_with("--"));
                continue;
            }
            out.push(a);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::RUNS;

    /// A try's option replaces the CMUdict runs' own (`s2s train` takes each once).
    #[test]
    fn extra_options_replace_those_of_args() {
        let run = RUNS
            .iter()
            .find(|r| r.name == "try-cmudict-bahdanau-dropout")
            .unwrap();
        let o = run.options();
        assert_eq!(o.iter().filter(|a| **a == "--dropout").count(), 1);
        let i = o.iter().position(|a| *a == "--dropout").unwrap();
        assert_eq!(o[i + 1], "0.3");
        assert!(!o.contains(&"0.2"));
        // Everything else of args is kept, `--quiet` (no value) included.
        assert_eq!(o.len(), run.args.len());
        assert!(o.contains(&"--quiet") && o.contains(&"--patience"));
    }
}

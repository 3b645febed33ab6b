//! The model parts a build compiles (this crate's cargo features) and the ones a model
//! needs ([`ModelDesc::features`](crate::ModelDesc::features)): one definition, which
//! `s2s inspect` prints and [`Net::bind`](crate::Net::bind) checks, refusing a model
//! that needs a part the build leaves out with
//! [`Error::NotCompiled`](crate::Error::NotCompiled). A leaf: it names nothing else of
//! the crate.

use s2s_kernels::Layout;

s2s_kernels::named_enum! {
    /// A part of the runtime that a cargo feature of this crate compiles (all of them by
    /// default; see the crate's README), in the order [`Features`] lists them, named as
    /// the cargo feature (the same in `seq2seq` and the firmware).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    pub enum Feature {
        /// GRU cells.
        Gru = 0 => "gru",
        /// LSTM cells.
        Lstm = 1 => "lstm",
        /// The additive attention score (Bahdanau, Keras `AdditiveAttention`).
        Additive = 2 => "additive",
        /// The multiplicative attention scores: dot, scaled dot, general (Luong).
        Multiplicative = 3 => "multiplicative",
        /// Dense and mean bridges into the decoder's initial state (`Init::Dense`,
        /// `Init::Mean`).
        Bridge = 4 => "bridge",
        /// Beam search (no model needs it: greedy decoding runs every model).
        Beam = 5 => "beam",
        /// The Cortex-M0 kernel of the `v6m` weight layout
        /// ([`Layout::V6m`](s2s_kernels::Layout::V6m)); other targets read it without.
        V6mLayout = 6 => "v6m-layout",
        /// Prefix slots: source tokens chosen per call
        /// ([`Prefix`](crate::vocab::Prefix)).
        PrefixSlots = 7 => "prefix-slots",
        /// Hard monotonic attention (`Ordering::Monotonic`).
        Monotonic = 8 => "monotonic",
        /// Local attention (`AttentionDesc::window`).
        Local = 9 => "local",
    }
}

impl Feature {
    /// Whether this build compiles the part.
    pub const fn compiled(self) -> bool {
        match self {
            Feature::Gru => cfg!(feature = "gru"),
            Feature::Lstm => cfg!(feature = "lstm"),
            Feature::Additive => cfg!(feature = "additive"),
            Feature::Multiplicative => cfg!(feature = "multiplicative"),
            Feature::Bridge => cfg!(feature = "bridge"),
            Feature::Beam => cfg!(feature = "beam"),
            Feature::V6mLayout => Layout::V6m.compiled(),
            Feature::PrefixSlots => cfg!(feature = "prefix-slots"),
            Feature::Monotonic => cfg!(feature = "monotonic"),
            Feature::Local => cfg!(feature = "local"),
        }
    }
}

/// A set of [`Feature`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Features(u16);

impl Features {
    /// No feature.
    pub const NONE: Features = Features(0);

    /// The features this build compiles.
    pub const COMPILED: Features = {
        let mut set = Features::NONE;
        let mut i = 0;
        while i < Feature::ALL.len() {
            if Feature::ALL[i].compiled() {
                set = set.with(Feature::ALL[i]);
            }
            i += 1;
        }
        set
    };

    /// The set with `f` added.
    pub const fn with(self, f: Feature) -> Features {
        Features(self.0 | 1 << f as u16)
    }

    /// Whether `f` is in the set.
    pub const fn contains(self, f: Feature) -> bool {
        self.0 & 1 << f as u16 != 0
    }

    /// The features of the set, in [`Feature::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Feature> {
        Feature::ALL.into_iter().filter(move |&f| self.contains(f))
    }

    /// The first feature of the set that this build leaves out, if any.
    pub fn first_missing(self) -> Option<Feature> {
        self.iter().find(|f| !Features::COMPILED.contains(*f))
    }
}

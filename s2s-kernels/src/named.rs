//! [`named_enum!`](crate::named_enum): a fieldless enum whose values are numbered
//! `0, 1, 2...` (the id a file or a protocol stores) and named (configurations, the
//! command line, reports), with its list, its look-ups by id and by name written once.

/// Declares a `#[repr(u8)]` enum whose variants are numbered from 0 in order and each
/// named by a string, with `ALL` (every value, in id order), `from_id`, `name` and
/// `from_name`. A variant numbered out of order fails the build.
///
/// ```
/// s2s_kernels::named_enum! {
///     /// A colour.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub enum Colour {
///         /// Red.
///         Red = 0 => "red",
///         /// Green.
///         Green = 1 => "green",
///     }
/// }
/// assert_eq!(Colour::ALL, [Colour::Red, Colour::Green]);
/// assert_eq!(Colour::from_id(1), Some(Colour::Green));
/// assert_eq!(Colour::from_name("red").map(Colour::name), Some("red"));
/// assert_eq!(Colour::from_id(2), None);
/// ```
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $var:ident = $id:literal => $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[repr(u8)]
        $vis enum $name {
            $($(#[$vmeta])* $var = $id,)+
        }

        impl $name {
            #[doc = concat!("Every ", stringify!($name), ", in id order.")]
            pub const ALL: [$name; [$(stringify!($var)),+].len()] = [$($name::$var),+];

            #[doc = concat!("The ", stringify!($name), " with this id.")]
            pub fn from_id(id: u8) -> Option<Self> {
                Self::ALL.get(id as usize).copied()
            }

            #[doc = concat!("Its name:", $(" `", $text, "`",)+ ".")]
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$var => $text,)+
                }
            }

            #[doc = concat!("The ", stringify!($name), " named `name` (see [`", stringify!($name), "::name`]).")]
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|v| v.name() == name)
            }
        }

        const _: () = {
            let mut i = 0;
            while i < $name::ALL.len() {
                assert!($name::ALL[i] as usize == i, "variants numbered 0, 1, 2... in order");
                i += 1;
            }
        };
    };
}

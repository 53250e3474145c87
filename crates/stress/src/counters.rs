//! A struct of named `u64` counters with the helpers every counter set of the harness
//! needs: the counters by name in declaration order (for stable, greppable output), set by
//! name (to parse them back) and sum.

/// Declares `pub struct $name { pub field: u64, ... }` with `named()`, `set()` and `add()`.
macro_rules! counters {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$doc:meta])* $field:ident),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$doc])* pub $field: u64,)*
        }

        impl $name {
            /// Every counter by name, in declaration order.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($field), self.$field)),*]
            }

            /// Sets the counter called `name`; false if there is none.
            pub fn set(&mut self, name: &str, value: u64) -> bool {
                match name {
                    $(stringify!($field) => self.$field = value,)*
                    _ => return false,
                }
                true
            }

            /// Adds every counter of `other`.
            pub fn add(&mut self, other: &$name) {
                $(self.$field += other.$field;)*
            }

            /// The sum of every counter.
            pub fn sum(&self) -> u64 {
                0 $(+ self.$field)*
            }
        }
    };
}

pub(crate) use counters;

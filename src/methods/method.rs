//! The `Method` type: one variant per registered method, generated from the registry's list
//! ([`super::registry`]) by reading its variant names only. It lives apart from the registry, which
//! imports every method, so that every module can name a method without importing the others.

/// Generates the `Method` enum and `Method::ALL` from the registry's list.
macro_rules! method_enum {
    ($($variant:ident => $spec:path,)*) => {
        /// A training method; see [`Method::spec`] for what each one is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $($variant,)*
        }

        impl Method {
            /// Every method, in registry order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];
        }
    };
}

registered_methods!(method_enum);

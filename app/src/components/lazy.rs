//! Lazy routes: each screen's pages load in their own browser chunk.

/// Declares a lazy route showing one page component: the component's code goes into its own
/// wasm chunk, fetched when a browser first opens the route (and preloaded by the server's
/// HTML when the page is rendered there).
///
/// ```ignore
/// lazy_page!(
///     /// The list of listeners.
///     ListenersRoute => Listeners
/// );
/// ```
#[macro_export]
macro_rules! lazy_page {
    ($(#[$meta:meta])* $route:ident => $page:ident) => {
        $(#[$meta])*
        pub struct $route;

        #[::leptos_router::lazy_route]
        impl ::leptos_router::LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> ::leptos::prelude::AnyView {
                ::leptos::prelude::IntoAny::into_any($page())
            }
        }
    };
}

//! Lazy routes: each screen's pages load together in their own browser chunk.

/// Declares a screen's routes: its pages' code goes into one wasm chunk, fetched when a browser
/// first opens one of them (and preloaded by the server's HTML when the page is rendered there).
///
/// One split point per screen rather than per page: pages of a screen share most of their code
/// (its types, its form plumbing), and every split point multiplies the chunks the splitter cuts
/// out of code two of them share, each with its own module overhead (docs/perf.md).
///
/// ```text
/// lazy_screen!(listeners_screen {
///     /// The list of listeners.
///     ListenersRoute => Listeners,
///     /// A listener's page.
///     ListenerDetailRoute => ListenerDetailPage,
/// });
/// ```
#[macro_export]
macro_rules! lazy_screen {
    ($chunk:ident { $($(#[$meta:meta])* $route:ident => $page:ident),+ $(,)? }) => {
        mod $chunk {
            use super::*;

            /// Which page of the chunk a route shows.
            #[derive(Clone, Copy)]
            #[allow(clippy::enum_variant_names)]
            pub enum Page {
                $($route),+
            }

            /// The pages, behind the split point that puts them in their own chunk (named after
            /// the chunk: the split point's name, `pages` the function's, so that its preloader is
            /// `__preload_pages` in every chunk's module).
            #[::leptos::lazy($chunk)]
            fn pages(page: Page) -> ::leptos::prelude::AnyView {
                match page {
                    $(Page::$route => ::leptos::prelude::IntoAny::into_any($page()),)+
                }
            }

            $(
                $(#[$meta])*
                pub struct $route;

                impl ::leptos_router::LazyRoute for $route {
                    fn data() -> Self {
                        $route
                    }

                    async fn view(_this: Self) -> ::leptos::prelude::AnyView {
                        pages(Page::$route).await
                    }

                    // NB: the router hydrates a route only once its chunk is loaded; this is how
                    // it loads it first (what `#[lazy_route]` generates).
                    async fn preload() {
                        #[cfg(target_arch = "wasm32")]
                        __preload_pages().await;
                    }
                }
            )+
        }

        pub use $chunk::{$($route),+};
    };
}

//! `#[needs(service, ...)]`, the test attribute of `vnfm-test-env` (use it through that
//! crate: `#[vnfm_test_env::needs(postgres)]`).

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::punctuated::Punctuated;
use syn::{Ident, ItemFn, Token, parse_macro_input, parse_quote};

#[allow(dead_code)]
#[path = "../../src/services.rs"]
mod services;

/// Marks a test as needing services of `vnfm_test_env::SERVICES`:
/// `#[cfg_attr(not(all(vnfm_test_<service>, ...)), ignore = "needs <what>: <how to start it>")]`,
/// and `vnfm_test_env::require(&[...])` as the body's first statement. Goes above `#[test]`
/// or `#[tokio::test]`: below `#[test]` it would come too late, the test harness having read
/// the test's attributes already (the test would run, and fail, instead of being ignored).
#[proc_macro_attribute]
pub fn needs(args: TokenStream, item: TokenStream) -> TokenStream {
    let names =
        parse_macro_input!(args with Punctuated::<Ident, Token![,]>::parse_separated_nonempty);
    let mut func = parse_macro_input!(item as ItemFn);
    let mut found = Vec::new();
    for name in &names {
        match services::service(&name.to_string()) {
            Some(s) => found.push(s),
            None => {
                let message = format!(
                    "no test service `{name}`; the services are: {}",
                    services::names()
                );
                return syn::Error::new(name.span(), message)
                    .to_compile_error()
                    .into();
            }
        }
    }
    let reason = services::reason(&found);
    let cfgs = names.iter().map(|n| format_ident!("vnfm_test_{}", n));
    let strings = names.iter().map(|n| n.to_string());
    func.block
        .stmts
        .insert(0, parse_quote!(::vnfm_test_env::require(&[#(#strings),*]);));
    quote!(
        #[cfg_attr(not(all(#(#cfgs),*)), ignore = #reason)]
        #func
    )
    .into()
}

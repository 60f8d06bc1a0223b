//! HTTP clients: every reqwest client mcpeval builds, and the ones rmcp builds for it, speak
//! TLS through rustls with the `ring` crypto provider, installed here once per process.

use std::sync::Once;

/// A reqwest client builder with the crypto provider in place: build every HTTP client from it.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

/// Makes `ring` the process's rustls crypto provider, unless one is already installed. reqwest
/// (built without a provider of its own) panics on the first client built before this, so it
/// is called before any client is built, rmcp's too.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider was installed first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_builds_and_the_provider_is_ring() {
        client_builder().build().expect("a client builds");
        let provider = rustls::crypto::CryptoProvider::get_default().expect("a provider");
        let ring = rustls::crypto::ring::default_provider();
        let names = |p: &rustls::crypto::CryptoProvider| {
            p.cipher_suites
                .iter()
                .map(|s| format!("{:?}", s.suite()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(provider), names(&ring));
    }
}

//! A real agent over real HTTP, for the `autoretry simulate` demo and its
//! tests: a local provider that speaks the streaming wire formats of the
//! Anthropic Messages API and the OpenAI Chat Completions API with a
//! scripted plan of failures, and a client agent on the tokio driver that
//! turns each actual response into the machine's inputs and carries out
//! its outputs.
//!
//! | module | what |
//! |---|---|
//! | [`plan`] | the failures, as replies per request |
//! | [`wire`], [`anthropic`], [`openai`] | the two wire formats, both directions |
//! | [`provider`] | the HTTP server (hyper) on 127.0.0.1 |
//! | [`transport`] | the agent's HTTP client and SSE reader |
//! | [`clock`] | the time scale, the driver's sleeper, the clocks |

pub mod agent;
pub mod anthropic;
pub mod clock;
pub mod openai;
pub mod plan;
pub mod provider;
pub mod record;
pub mod show;
pub mod transport;
pub mod wire;

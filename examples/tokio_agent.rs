//! An agent on tokio with auto-retry: the provider is overloaded twice,
//! then answers. With `modelFallback` on and one retry per model, the
//! second overload asks for another model (`switch_model`), which the host
//! answers with the boolean alone. Press Enter during a backoff to cancel
//! the retry (the agent's Esc).
//! `cargo run --example tokio_agent --features tokio`
use std::time::Duration;

use autoretry::host::tokio::{TokioDriver, TokioSleeper};
use autoretry::{HostOptions, InputBuf, Machine, MessageBuf, Output, RetrySettings, StopReason};
use tokio::sync::mpsc::{self, Sender};

/// One provider call: the first two fail with an overload.
async fn provider(call: u32) -> MessageBuf {
    tokio::time::sleep(Duration::from_millis(300)).await;
    match call {
        1 | 2 => MessageBuf::error(format!("529 overloaded_error (call {call})")),
        _ => MessageBuf::new(StopReason::Stop),
    }
}

/// Runs the agent once; its end comes back through the channel.
fn run_agent(tx: &Sender<InputBuf>, calls: &mut u32) {
    *calls += 1;
    let (tx, call) = (tx.clone(), *calls);
    tokio::spawn(async move { tx.send(InputBuf::agent_end(provider(call).await)).await });
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (tx, mut rx) = mpsc::channel(8);
    let esc = tx.clone(); // Esc: a line on stdin cancels the retry.
    std::thread::spawn(move || {
        std::io::stdin()
            .lines()
            .for_each(|_| drop(esc.blocking_send(InputBuf::AbortRetry)))
    });
    let settings = RetrySettings::DEFAULT
        .with_base_delay_ms(1000)
        .with_max_retries(1)
        .with_model_fallback(true);
    let mut driver = TokioDriver::new(Machine::new(settings, HostOptions::DEFAULT), TokioSleeper);
    let mut fallback_models = vec!["fallback-model"];
    let mut calls = 0;
    run_agent(&tx, &mut calls);
    while let Some(step) = driver.next(rx.recv()).await {
        let outputs = match step.outputs {
            Ok(outputs) => outputs,
            // Refused (spec §6a): nothing changed; say why and go on.
            Err(refused) => {
                eprintln!("refused {:?}: {refused}", step.input);
                continue;
            }
        };
        for output in outputs {
            match output {
                // Every event, in a form that shows each field (`Display`
                // is the terminal line, empty for a success).
                Output::Emit(event) => println!("{event:?}"),
                // A continuation (spec §11.2) runs the agent again too.
                Output::ContinueAgent | Output::ResumeAgent => run_agent(&tx, &mut calls),
                // Another model, if one is left: the answer is the boolean
                // (the driver kept the failed message's text).
                Output::SwitchModel { reason } => {
                    let model = fallback_models.pop();
                    println!("switch_model ({}): {model:?}", reason.as_str());
                    let switched = model.is_some();
                    tx.send(InputBuf::ModelSwitched { switched }).await.unwrap();
                }
                // No credential store here: nothing else to switch to.
                Output::MarkUsageLimit { .. } => {
                    let answer = InputBuf::UsageLimitMarked { switched: false };
                    tx.send(answer).await.unwrap();
                }
                Output::CheckCompaction => {
                    return println!("the prompt is over after {calls} calls")
                }
                _ => {}
            }
        }
    }
}

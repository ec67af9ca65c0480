//! `CallAgent`: asks the agent once, with the conversation and the tools the member reaches,
//! and commits its answer or the tool calls it asks for.

use std::time::{Duration, Instant};

use crate::domain::{
    Awaiting, Event, EventKind, Memory, NewEvent, Session, ToolPolicy, TurnProgress,
    effective_policy, model_name,
};
use crate::error::Chain;
use crate::ids::SessionKey;
use crate::memory;
use crate::ports::{
    AgentAction, AgentError, AgentReply, AgentRequest, Charge, Drafts, Integration, NoDrafts,
    Reads, TokenUsage, ToolSpec,
};
use crate::telemetry::{self, ModelOutcome, TurnOutcome};
use crate::trace;
use tracing::Instrument;

use super::bounds::{bounded_input, bounded_text};
use super::consent::{Offered, asked};
use super::drafts::Latest;
use super::record::Found;
use super::wire::{Next, StepError, StepInput, StepOutput, errors};
use super::{
    HISTORY_BYTES, HISTORY_WINDOW, Handler, MAX_AGENT_CALLS, MAX_TOOL_CALLS_PER_STEP,
    RATE_LIMIT_WAIT_BUDGET, Steps, TOOL_LISTING_TIMEOUT,
};

/// What `CallAgent` reads of the member's standing before it asks the agent.
struct Standing {
    /// Whose spending limit is reached, if one is.
    capped: Option<Capped>,
    /// The member's memory, when the agent is to be given it and its tools.
    memory: Option<Memory>,
}

/// A spending limit that stops a turn before the agent is asked.
#[derive(Debug, Clone, Copy)]
enum Capped {
    /// The organisation's monthly cost cap.
    Org,
    /// The member's own monthly allowance.
    Member,
}

impl Steps {
    /// Asks the agent once. Commits either the `tool_use` events it asks for or its
    /// `agent_message`, with the step's cost, in one write. When the organisation's spend has
    /// reached its cap, or the member's their allowance, the agent is not asked: the turn ends
    /// with a `cost_cap_reached` (or `member_cap_reached`) error instead. Every agent call starts under the cap and each turn has one call in flight, so
    /// concurrent turns overspend the cap by at most one step each.
    pub async fn call_agent(&self, input: &StepInput) -> Result<StepOutput, StepError> {
        let key = input.session.key();
        let s = match self.begin(input, Next::Agent, Handler::CallAgent).await? {
            Found::Proceed(s) => *s,
            Found::Return(out) => return Ok(out),
        };
        let agent_calls = s.turn.as_ref().map_or(0, |t| t.agent_calls);
        let standing = self.standing(&key).await?;
        let (events, charge, answered) = if let Some(capped) = standing.capped {
            let event = match capped {
                Capped::Org => NewEvent::error(
                    "cost_cap_reached",
                    "Your organisation has reached its monthly spending cap for the AI provider, \
                     so this message was not answered.",
                ),
                Capped::Member => NewEvent::error(
                    "member_cap_reached",
                    "You have used your monthly allowance for the AI provider, so this message \
                     was not answered. It renews on the first of next month.",
                ),
            };
            (vec![event], None, true)
        } else {
            let (mut tools, offered) = self.tools(&key).await?;
            // The memory's names are reserved: `RunTool` runs the memory's tool by that name,
            // so an integration's tool of the same name is never offered.
            tools.retain(|t| !memory::is_memory_tool(&t.name));
            if standing.memory.is_some() {
                tools.splice(0..0, memory::tools());
            }
            let (history, steps) = self.turn_log(&s).await?;
            let request = AgentRequest {
                org: key.org.clone(),
                history,
                steps,
                must_answer: agent_calls + 1 >= MAX_AGENT_CALLS || tools.is_empty(),
                tools,
                memory: standing.memory.and_then(|m| m.prompt()),
            };
            let asked = (request.history.last()).map(|e| e.occurred_at.millis());
            let (reply, first_words) = self.ask_with_drafts(&s, request.clone()).await?;
            if let (AgentAction::Answer(_), Some(asked)) = (&reply.action, asked) {
                let waited =
                    |at: i64| Duration::from_millis(at.saturating_sub(asked).max(0) as u64);
                let now = self.clock.now().millis();
                let first = now - first_words.map_or(0, |f| f.elapsed().as_millis() as i64);
                telemetry::answer_times(waited(first), waited(now));
            }
            let events = match &reply.action {
                AgentAction::Answer(text) => vec![NewEvent::agent_message(&bounded_text(text))],
                AgentAction::UseTools(calls) if !calls.is_empty() && !request.must_answer => {
                    let calls = &calls[..calls.len().min(MAX_TOOL_CALLS_PER_STEP)];
                    let approvals = self.approvals(&key, calls, &offered).await?;
                    (calls.iter().zip(approvals))
                        .map(|(c, approval)| NewEvent::ToolUse {
                            tool: c.tool.clone(),
                            input: bounded_input(&c.input),
                            approval,
                        })
                        .collect()
                }
                AgentAction::UseTools(_) => {
                    return Err(StepError::new(
                        errors::AGENT,
                        "the agent asked for tools when it had to answer",
                    ));
                }
            };
            // A call that used nothing (the built-in agent) writes no usage item.
            let used = reply.cost_micros > 0 || reply.usage != TokenUsage::default();
            let now = self.clock.now();
            let charge = used.then(|| Charge {
                month: now.month(),
                day: now.day(),
                model: model_name(&reply.model),
                tokens: reply.usage,
                micros: reply.cost_micros,
            });
            let answered = matches!(reply.action, AgentAction::Answer(_));
            (events, charge, answered)
        };
        let outcome = match standing.capped {
            Some(Capped::Org) => TurnOutcome::OrgCap,
            Some(Capped::Member) => TurnOutcome::MemberCap,
            None => TurnOutcome::Answered,
        };
        let count = events.len() as u64;
        let out = self
            .commit_step(
                input,
                Next::Agent,
                s,
                events.clone(),
                charge.as_ref(),
                |s| {
                    let first = s.next_seq;
                    let mut next = s.clone();
                    let approvals = asked(&events, first);
                    let paused = !approvals.is_empty();
                    next.turn = Some(TurnProgress {
                        step: s.turn.as_ref().map_or(0, |t| t.step) + 1,
                        agent_calls: agent_calls + 1,
                        from_seq: s.turn.as_ref().map_or(first, |t| t.from_seq),
                        awaiting: if answered {
                            Awaiting::Finish
                        } else {
                            Awaiting::Tools((first..first + count).collect())
                        },
                        approvals,
                        calling: None,
                    });
                    if paused {
                        // Nothing runs while the member decides: the run is released with the turn
                        // kept, and their answer claims the next one.
                        next.run_id = None;
                        next.exec = None;
                    }
                    next
                },
            )
            .await?;
        if answered {
            telemetry::turn(outcome);
        }
        Ok(out)
    }

    /// [`Steps::ask`] while the answer's text is written beside `s` as the provider streams
    /// it ([`Steps::keep_drafts`]), when `s` waits on this agent call. Answers the reply, and
    /// when the provider streamed text, when its first words came.
    async fn ask_with_drafts(
        &self, s: &Session, request: AgentRequest,
    ) -> Result<(AgentReply, Option<Instant>), StepError> {
        let (Some(mark), Some(run)) = (s.draft_mark(), &s.run_id) else {
            return Ok((self.ask(request, &NoDrafts).await?, None));
        };
        let (latest, written) = Latest::new();
        let reply = tokio::select! {
            biased;
            reply = self.ask(request, &latest) => reply?,
            never = self.keep_drafts(&s.key, run, mark, written) => match never {},
        };
        Ok((reply, latest.first_words()))
    }

    /// One provider call, waiting out short rate limits the provider announces, telling
    /// `drafts` the answer as it streams. Errors: `AgentRejected` when retrying cannot help,
    /// `AgentFailed` otherwise.
    async fn ask(
        &self, request: AgentRequest, drafts: &dyn Drafts,
    ) -> Result<AgentReply, StepError> {
        let mut waited = Duration::ZERO;
        // Labelled with the model asked for (the deployment's setting), which the failures
        // name too, not the version the provider says it ran.
        let model = model_name(self.agent()?.model());
        loop {
            let span = trace::chat(self.agent()?.provider(), &model);
            let replied = (self.agent()?.respond_streaming(request.clone(), drafts))
                .instrument(span.clone())
                .await;
            if let Err(e) = &replied {
                trace::failed(&span, agent_failure(e).as_str());
            }
            match replied {
                Ok(reply) => {
                    trace::chat_answered(&span, reply.usage.input, reply.usage.output);
                    let tokens = Some((reply.usage.input, reply.usage.output));
                    telemetry::model_call(&model, ModelOutcome::Ok, tokens, reply.cost_micros);
                    tracing::info!(
                        org = %request.org,
                        input_tokens = reply.usage.input,
                        output_tokens = reply.usage.output,
                        cost_micros = reply.cost_micros,
                        "agent step"
                    );
                    return Ok(reply);
                }
                Err(AgentError::RateLimited {
                    retry_after: Some(wait),
                }) if waited + wait <= RATE_LIMIT_WAIT_BUDGET => {
                    self.model_failed(ModelOutcome::RateLimited)?;
                    waited += wait;
                    tracing::info!(wait_ms = wait.as_millis() as u64, "provider rate limit");
                    tokio::time::sleep(wait).await;
                }
                Err(e @ AgentError::Rejected(_)) => {
                    self.model_failed(ModelOutcome::Rejected)?;
                    return Err(StepError::new(errors::AGENT_REJECTED, e.to_string()));
                }
                Err(e) => {
                    self.model_failed(agent_failure(&e))?;
                    return Err(StepError::new(errors::AGENT, e.to_string()));
                }
            }
        }
    }

    /// Counts a call to the model that did not answer.
    fn model_failed(&self, outcome: ModelOutcome) -> Result<(), StepError> {
        telemetry::model_call(&model_name(self.agent()?.model()), outcome, None, 0);
        Ok(())
    }

    /// Where the member stands, in one batched read: whether the organisation's month-to-date
    /// spend has reached its cost cap, or the member's theirs, and the member's memory when the agent remembers and
    /// neither the organisation nor the member switched it off. A memory that cannot be read
    /// is logged and left out: the turn goes on without it.
    async fn standing(&self, key: &SessionKey) -> Result<Standing, StepError> {
        let month = self.clock.now().month();
        let remembers = self.agent()?.remembers();
        let reads = Reads {
            org_record: true,
            usage_month: Some(&month),
            memory: remembers,
            ..Reads::member(&key.org, &key.user)
        };
        let snapshot = self.batch.read_batch(&reads).await?;
        let org = snapshot.org.as_ref();
        // The organisation's cost cap, or the member's own spend allowance.
        let member_cap = org
            .zip(snapshot.member.as_ref())
            .and_then(|(o, m)| m.caps_in(o).cost_micros);
        let capped = if org
            .and_then(|o| o.cost_cap_micros)
            .is_some_and(|cap| snapshot.usage.cost_micros >= cap)
        {
            Some(Capped::Org)
        } else if member_cap.is_some_and(|cap| snapshot.member_usage.cost_micros >= cap) {
            Some(Capped::Member)
        } else {
            None
        };
        let memory = if remembers && org.is_some_and(|o| !o.memory_off) {
            match memory::parse(snapshot.memory.as_deref()) {
                Ok(m) if !m.off => Some(m),
                Ok(_) => None,
                Err(e) => {
                    tracing::error!(org = %key.org, error = %Chain(&e), "left out a memory");
                    None
                }
            }
        } else {
            None
        };
        Ok(Standing { capped, memory })
    }

    /// The conversation the agent sees: the history up to the answered message (without
    /// messages queued behind it) and the turn's tool events so far.
    async fn turn_log(&self, s: &Session) -> Result<(Vec<Event>, Vec<Event>), StepError> {
        let user_seq = s.pending[0];
        let from = user_seq.saturating_sub(HISTORY_WINDOW);
        let mut log = Vec::new();
        let mut after = from.saturating_sub(1);
        while after + 1 < s.next_seq {
            let page = self.sessions.list_events(&s.key, after, 100).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            log.extend(page);
        }
        let turn_from = s.turn.as_ref().map_or(s.next_seq, |t| t.from_seq);
        let (history, own): (Vec<Event>, Vec<Event>) =
            log.into_iter().partition(|e| e.seq < turn_from);
        let mut history: Vec<Event> = history
            .into_iter()
            .filter(|e| e.kind() != EventKind::UserMessage || e.seq <= user_seq)
            .collect();
        // Over the byte budget, the oldest events go first; the question itself always stays.
        let mut excess = history
            .iter()
            .map(|e| e.body.payload().to_string().len())
            .sum::<usize>()
            .saturating_sub(HISTORY_BYTES);
        history.retain(|e| {
            if excess == 0 || e.seq == user_seq {
                return true;
            }
            excess = excess.saturating_sub(e.body.payload().to_string().len());
            false
        });
        let steps = own
            .into_iter()
            .filter(|e| matches!(e.kind(), EventKind::ToolUse | EventKind::ToolResult))
            .collect();
        Ok((history, steps))
    }

    /// The tools of every integration the member reaches, listed concurrently, each within
    /// [`TOOL_LISTING_TIMEOUT`], in the integrations' order, each name once. One that is down or
    /// slow is left out: the agent answers from what it can reach.
    async fn tools(&self, key: &SessionKey) -> Result<(Vec<ToolSpec>, Offered), StepError> {
        let connected = self
            .integrations()?
            .connected(&key.org, &key.user)
            .await
            .map_err(|e| StepError::new(errors::TOOL, e.to_string()))?;
        let mut listings = tokio::task::JoinSet::new();
        for (i, integration) in connected.into_iter().enumerate() {
            listings.spawn(async move {
                let listed = tokio::time::timeout(TOOL_LISTING_TIMEOUT, integration.tools()).await;
                // A tool the admin blocked is never offered.
                let listed = listed.map(|tools| {
                    tools.map(|mut tools| {
                        tools.retain(|t| !blocked(integration.as_ref(), t));
                        tools
                    })
                });
                // Each tool with its integration and the admin's rule for it, for its policy.
                let listed = listed.map(|tools| {
                    tools.map(|tools| {
                        let name = integration.name().to_owned();
                        (tools.into_iter())
                            .map(|t| {
                                let rule = integration.tool_rule(&t.name);
                                (t, name.clone(), rule)
                            })
                            .collect::<Vec<_>>()
                    })
                });
                (i, integration.name().to_owned(), listed)
            });
        }
        let mut found = Vec::new();
        while let Some(joined) = listings.join_next().await {
            match joined {
                Ok((i, _, Ok(Ok(list)))) => found.push((i, list)),
                Ok((_, name, Ok(Err(e)))) => tracing::warn!(integration = name, error = %e,
                    "could not list an integration's tools"),
                Ok((_, name, Err(_))) => tracing::warn!(
                    integration = name,
                    "an integration did not list its tools in time"
                ),
                Err(e) => tracing::error!(error = %e, "listing an integration's tools panicked"),
            }
        }
        found.sort_by_key(|(i, _)| *i);
        // A name two integrations offer is the first one's, as `find_tool` runs it.
        let mut tools: Vec<ToolSpec> = Vec::new();
        let mut offered = Offered::default();
        for (tool, integration, rule) in found.into_iter().flat_map(|(_, list)| list) {
            if tools.iter().any(|t| t.name == tool.name) {
                tracing::warn!(
                    tool = tool.name,
                    "two integrations offer a tool of this name; the first one's is kept"
                );
            } else {
                offered.add(&tool, integration, rule);
                tools.push(tool);
            }
        }
        Ok((tools, offered))
    }
}

/// Whether the admin's rule for `tool` of `integration` blocks it.
pub(super) fn blocked(integration: &dyn Integration, tool: &ToolSpec) -> bool {
    let rule = integration.tool_rule(&tool.name);
    effective_policy(tool.hints, rule, false).policy == ToolPolicy::Block
}

/// How a call to the model failed, as its metric and its span name it.
fn agent_failure(e: &AgentError) -> ModelOutcome {
    match e {
        AgentError::RateLimited { .. } => ModelOutcome::RateLimited,
        AgentError::Rejected(_) => ModelOutcome::Rejected,
        _ => ModelOutcome::Failed,
    }
}

//! What the machine gives back for one event: a [`Batch`] of side effects closed by exactly one
//! request, or nothing when the event answers nothing the machine waits for.

use super::Effect;

/// The effects of one event: fire-and-forget side effects, then exactly one request
/// ([`Effect::is_request`]; `Exit` is one, the request that ends the run). The driver performs
/// them in order and takes the request's answer as the next event.
///
/// Built in one place ([`Batch::new`]), which refuses any other shape, so a batch without a
/// request, with two, or with anything after its request cannot exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    /// Never empty; its last effect is the request and no other effect is one.
    effects: &'a [Effect],
}

/// Why a list of effects is no [`Batch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotABatch {
    /// No effect at all.
    Empty,
    /// Effects, but no request among them: nothing would answer them.
    NoRequest,
    /// More than one request: the driver could only answer one.
    TwoRequests,
    /// The request is not the last effect: what follows would be performed after its answer.
    RequestNotLast,
}

impl std::fmt::Display for NotABatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotABatch::Empty => "no effect",
            NotABatch::NoRequest => "no request",
            NotABatch::TwoRequests => "more than one request",
            NotABatch::RequestNotLast => "an effect after the request",
        })
    }
}

impl<'a> Batch<'a> {
    /// The batch of `effects`, if they are side effects closed by exactly one request.
    ///
    /// ```
    /// use sdlc_machine::machine::{Batch, Effect, NotABatch};
    ///
    /// let batch = Batch::new(&[Effect::CheckoutMain, Effect::SelectIssue]).unwrap();
    /// assert_eq!(batch.request(), &Effect::SelectIssue);
    /// assert_eq!(batch.side_effects(), [Effect::CheckoutMain]);
    /// assert_eq!(Batch::new(&[Effect::CheckoutMain]), Err(NotABatch::NoRequest));
    /// ```
    pub fn new(effects: &'a [Effect]) -> Result<Self, NotABatch> {
        let Some((last, side_effects)) = effects.split_last() else {
            return Err(NotABatch::Empty);
        };
        match (
            last.is_request(),
            side_effects.iter().any(Effect::is_request),
        ) {
            (true, false) => Ok(Batch { effects }),
            (true, true) => Err(NotABatch::TwoRequests),
            (false, true) => Err(NotABatch::RequestNotLast),
            (false, false) => Err(NotABatch::NoRequest),
        }
    }

    /// The one request, the batch's last effect: its answer is the machine's next event
    /// (`Exit` ends the run instead).
    pub fn request(&self) -> &'a Effect {
        // `new` refuses an empty list.
        &self.effects[self.effects.len() - 1]
    }

    /// The fire-and-forget effects performed before the request, in order.
    pub fn side_effects(&self) -> &'a [Effect] {
        &self.effects[..self.effects.len() - 1]
    }

    /// Every effect in order, the request last: what the journal records.
    pub fn effects(&self) -> &'a [Effect] {
        self.effects
    }

    /// Every effect in order, the request last.
    pub fn iter(&self) -> std::slice::Iter<'a, Effect> {
        self.effects.iter()
    }

    /// The exit code when the request ends the run.
    pub fn exit_code(&self) -> Option<u8> {
        match self.request() {
            Effect::Exit { code } => Some(*code),
            _ => None,
        }
    }
}

impl<'a> IntoIterator for Batch<'a> {
    type Item = &'a Effect;
    type IntoIter = std::slice::Iter<'a, Effect>;
    fn into_iter(self) -> Self::IntoIter {
        self.effects.iter()
    }
}

/// What [`Core::handle`](super::Core::handle) gives back for one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// Side effects and the request that asks for the next event.
    Batch(Batch<'a>),
    /// The event answers nothing the machine waits for in its state (any event to a halted
    /// machine, an answer to a request it never made): no effect, no request. The driver
    /// feeds only answers and never sees this; searches and replay do.
    Ignored,
    /// The machine's bug: what its handlers left is no batch (`why`). Debug builds (the
    /// tests, the searches) panic where it is built; a release runner stops without acting
    /// on it and says why.
    Broken(NotABatch),
}

impl<'a> Reply<'a> {
    /// The batch, if the event was an answer.
    pub fn batch(self) -> Option<Batch<'a>> {
        match self {
            Reply::Batch(batch) => Some(batch),
            Reply::Ignored | Reply::Broken(_) => None,
        }
    }

    /// The request, if the event was an answer.
    pub fn request(&self) -> Option<&'a Effect> {
        self.batch().map(|b| b.request())
    }

    /// Every effect in order (none when ignored).
    pub fn effects(&self) -> &'a [Effect] {
        self.batch().map_or(&[], |b| b.effects())
    }

    /// Every effect in order, owned (none when ignored).
    pub fn to_vec(&self) -> Vec<Effect> {
        self.effects().to_vec()
    }

    /// Every effect in order (none when ignored).
    pub fn iter(&self) -> std::slice::Iter<'a, Effect> {
        self.effects().iter()
    }

    /// Whether the event was ignored.
    pub fn is_empty(&self) -> bool {
        matches!(self, Reply::Ignored)
    }

    /// How many effects (0 when ignored).
    pub fn len(&self) -> usize {
        self.effects().len()
    }
}

impl<const N: usize> PartialEq<[Effect; N]> for Reply<'_> {
    fn eq(&self, other: &[Effect; N]) -> bool {
        self.effects() == other
    }
}

impl PartialEq<Vec<Effect>> for Reply<'_> {
    fn eq(&self, other: &Vec<Effect>) -> bool {
        self.effects() == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::Step;

    #[test]
    fn a_batch_is_side_effects_closed_by_exactly_one_request() {
        let check = Effect::CheckPreconditions { step: Step::Verify };
        let exit = Effect::Exit { code: 1 };
        let effects = [Effect::Cleanup, Effect::CheckoutMain, check];
        let batch = Batch::new(&effects).unwrap();
        assert_eq!(batch.request(), &check);
        assert_eq!(
            batch.side_effects(),
            [Effect::Cleanup, Effect::CheckoutMain]
        );
        assert_eq!(batch.iter().count(), 3);
        assert_eq!(batch.exit_code(), None);
        assert_eq!(Batch::new(&[exit]).unwrap().exit_code(), Some(1));
        // The machine's bug is refused where the batch is built: the driver never sees it.
        assert_eq!(Batch::new(&[]), Err(NotABatch::Empty));
        assert_eq!(Batch::new(&[Effect::Cleanup]), Err(NotABatch::NoRequest));
        assert_eq!(
            Batch::new(&[check, Effect::SelectIssue]),
            Err(NotABatch::TwoRequests)
        );
        assert_eq!(
            Batch::new(&[exit, Effect::Cleanup]),
            Err(NotABatch::RequestNotLast)
        );
    }
}

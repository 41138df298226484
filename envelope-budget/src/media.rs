//! Media beside the envelope: which of a tool's attachments a response's budget sends.
//!
//! The envelope comes first: media may take at most [`MEDIA_SHARE_PERCENT`] of the call's
//! budget, in the order attached, and what they take is taken from the envelope's budget. One
//! that does not fit is linked instead when it is a resource with a URI (the link is small), and
//! dropped otherwise; `meta.attachments` says which, for each.

use envelope_core::stage::meta_stamp;
use envelope_core::{Attachment, Delivery, Envelope};

/// The most of a call's budget the attached media may take, in percent: the envelope keeps the
/// rest, so media never starve the answer they come with.
pub const MEDIA_SHARE_PERCENT: usize = 50;

/// The attachments a response sends, and what they took of the budget.
#[derive(Debug, Default)]
pub(crate) struct Placed {
    /// What goes on the wire, in order: sent whole, or a link in place of a resource.
    pub(crate) sent: Vec<Attachment>,
    /// The characters the sent blocks take, about: taken from the envelope's budget.
    pub(crate) chars: usize,
}

/// Decides which of `attachments` are sent under `budget` (the call's, in characters; `None`
/// when nothing is trimmed, and then all are), and notes each in `envelope`'s
/// `meta.attachments`.
pub(crate) fn place<T>(
    attachments: Vec<Attachment>,
    budget: Option<usize>,
    envelope: &mut Envelope<T>,
) -> Placed {
    if attachments.is_empty() {
        return Placed::default();
    }
    let mut room = budget.map(|budget| budget.saturating_mul(MEDIA_SHARE_PERCENT) / 100);
    let mut placed = Placed::default();
    let mut notes = Vec::with_capacity(attachments.len());
    for attachment in attachments {
        let fits = |chars: usize| room.is_none_or(|room| chars <= room);
        let whole = fits(attachment.wire_chars());
        let link = (!whole)
            .then(|| attachment.as_link())
            .flatten()
            .filter(|link| fits(link.wire_chars()));
        let delivery = match (whole, &link) {
            (true, _) => Delivery::Sent,
            (false, Some(_)) => Delivery::Linked,
            (false, None) => Delivery::Dropped,
        };
        notes.push(attachment.note(delivery));
        let block = if whole { Some(attachment) } else { link };
        if let Some(block) = block {
            let chars = block.wire_chars();
            if let Some(room) = &mut room {
                *room -= chars;
            }
            placed.chars += chars;
            placed.sent.push(block);
        }
    }
    meta_stamp(envelope).attachments(notes);
    placed
}

#[cfg(test)]
mod tests {
    use envelope_core::{AttachmentKind, Envelope};
    use serde_json::json;

    use super::*;

    fn delivered(envelope: &Envelope<serde_json::Value>) -> Vec<(AttachmentKind, Delivery)> {
        envelope
            .meta()
            .attachments()
            .iter()
            .map(|note| (note.kind, note.delivery))
            .collect()
    }

    #[test]
    fn without_a_budget_everything_is_sent() {
        let mut envelope = Envelope::ok(json!(1));
        let big = Attachment::image(&vec![0; 100_000], "image/png");
        let placed = place(vec![big.clone()], None, &mut envelope);
        assert_eq!(placed.sent, vec![big]);
        assert_eq!(
            delivered(&envelope),
            vec![(AttachmentKind::Image, Delivery::Sent)]
        );
    }

    #[test]
    fn over_budget_a_resource_is_linked_and_an_image_dropped() {
        let mut envelope = Envelope::ok(json!(1));
        let small = Attachment::image(&[1, 2, 3], "image/png");
        let big_image = Attachment::image(&vec![0; 30_000], "image/png");
        let big_file =
            Attachment::text_resource("file:///srv/big.log", "text/plain", "x".repeat(30_000));
        let placed = place(
            vec![small.clone(), big_image, big_file],
            Some(8_000),
            &mut envelope,
        );
        assert_eq!(
            delivered(&envelope),
            vec![
                (AttachmentKind::Image, Delivery::Sent),
                (AttachmentKind::Image, Delivery::Dropped),
                (AttachmentKind::Resource, Delivery::Linked),
            ]
        );
        assert_eq!(placed.sent.len(), 2);
        assert_eq!(placed.sent[0], small);
        assert_eq!(placed.sent[1].kind(), AttachmentKind::ResourceLink);
        assert!(placed.chars <= 4_000, "{}", placed.chars);
        // The note keeps the size of what was not sent, so the agent knows what it would cost.
        assert_eq!(envelope.meta().attachments()[1].bytes, Some(30_000));
    }

    #[test]
    fn a_transport_without_media_drops_every_one() {
        let mut envelope = Envelope::ok(json!(1));
        let resource = Attachment::text_resource("file:///a", "text/plain", "a");
        let placed = place(
            vec![resource, Attachment::image(&[1], "image/png")],
            Some(0),
            &mut envelope,
        );
        assert!(placed.sent.is_empty());
        assert_eq!(
            delivered(&envelope),
            vec![
                (AttachmentKind::Resource, Delivery::Dropped),
                (AttachmentKind::Image, Delivery::Dropped),
            ]
        );
    }

    #[test]
    fn media_never_take_more_than_their_share() {
        let mut envelope = Envelope::ok(json!(1));
        let images: Vec<_> = (0..10)
            .map(|_| Attachment::image(&[0; 600], "image/png"))
            .collect();
        let placed = place(images, Some(4_000), &mut envelope);
        assert!(placed.chars <= 2_000, "{}", placed.chars);
        assert!(!placed.sent.is_empty());
        let dropped = envelope
            .meta()
            .attachments()
            .iter()
            .filter(|note| note.delivery == Delivery::Dropped)
            .count();
        assert_eq!(dropped + placed.sent.len(), 10);
    }
}

"""The typed conversation: a reply's versions, the images a deployment reads, and which turns the model is sent
(a new picture starts them unless the policy keeps the whole conversation; each adapter its own exchanges)."""

import pytest

from app.core.conversation import ContextPolicy, Conversation, Media, ReplyVersion, Turn

FIRST = ReplyVersion(text="Arr, Paris be", adapter="pirate", figures="3 tokens · pirate · K", cut_at=3)
SECOND = ReplyVersion(text="Paris.", figures="2 tokens · base model · K", saw=(("Labels: sign 80%",),))


def test_regenerate_adds_a_shown_version_and_stepping_stays_in_range():
    reply = Turn.reply(FIRST).added(SECOND)
    assert reply.current == SECOND and reply.shown == 1 and reply.text == "Paris." and reply.adapter is None
    assert reply.stepped(-1).current == FIRST and reply.stepped(-1).text == "Arr, Paris be"
    assert reply.stepped(-5).shown == 0 and reply.stepped(3).shown == 1
    longer = ReplyVersion(text="Arr, Paris be the place", adapter="pirate")
    assert reply.stepped(-1).with_current(longer).versions == (longer, SECOND)
    assert reply.stepped(-1).with_text("Arr").current == ReplyVersion("Arr", "pirate", figures=FIRST.figures,
                                                                      cut_at=3)


def test_a_turn_refuses_what_it_cannot_be():
    with pytest.raises(ValueError, match="at least one version"):
        Turn("assistant")
    with pytest.raises(ValueError, match="role"):
        Turn("system", "x")
    with pytest.raises(ValueError, match="no reply versions"):
        Turn("user", "x", versions=(FIRST,))


def test_images_are_fields_and_gone_ones_are_not_sent():
    asked = Conversation.asking("What is it?", ["/tmp/a.png", b"png bytes"])
    assert asked.turns[0].media == (Media("a.png", "/tmp/a.png"), Media(data=b"png bytes"))
    assert asked.current_images() == ("/tmp/a.png", b"png bytes")
    talk = Conversation((Turn.user("old", (Media.of("/old.png"),)), Turn.reply(SECOND),
                         Turn.user("", (Media("gone.png"), Media.of("/new.png"))), Turn.user("second")))
    assert talk.current_images() == ("/new.png",) and talk.turns[2].has_pictures
    assert talk.latest_images() == ("/new.png",) and talk.last_user_text() == "second"
    assert Conversation((Turn.user("a"), Turn.reply(SECOND))).current_images() == ()


def test_without_last_reply_and_last_reply():
    talk = Conversation((Turn.user("a"), Turn.reply(FIRST)))
    assert talk.last_reply == Turn.reply(FIRST) and talk.without_last_reply() == Conversation((Turn.user("a"),))
    assert Conversation((Turn.user("a"),)).last_reply is None
    assert talk.with_last_reply(Turn.reply(SECOND)).turns[-1].text == "Paris."


ROCKET, SHAPES, COFFEE = (Media.of(f"/up/{name}.png") for name in ("rocket", "shapes", "coffee"))


def about(text: str, picture: Media | None = None, adapter: str | None = None) -> list[Turn]:
    return [Turn.user(text, (picture,) if picture else ()), Turn.reply(ReplyVersion(f"reply to {text}", adapter))]


PICTURES = Conversation((*about("a rocket?", ROCKET), *about("how fast?"), *about("shapes?", SHAPES),
                         *about("what colours?"), Turn.user("and this?", (COFFEE,))))


def test_a_new_picture_starts_what_the_model_sees():
    context = PICTURES.context_for_reply(ContextPolicy(), None)
    assert context.places == (8,) and context.conversation.turns == (PICTURES.turns[8],)
    follow_up = PICTURES.with_turn(Turn.reply(ReplyVersion("a coffee"))).with_turn(Turn.user("is it hot?"))
    assert follow_up.context_for_reply(ContextPolicy(), None).places == (8, 9, 10)  # the picture's turn stays in
    before_coffee = Conversation(PICTURES.turns[:8])
    assert before_coffee.context_for_reply(ContextPolicy(), None).places == (4, 5, 6, 7)  # from the shapes on


def test_keeping_the_whole_conversation_sends_every_turn():
    context = PICTURES.context_for_reply(ContextPolicy(keep_pictures=True), None)
    assert context.places == tuple(range(9)) and context.conversation == PICTURES


def test_a_conversation_without_pictures_is_sent_whole():
    talk = Conversation((*about("hi"), *about("and?"), Turn.user("more")))
    assert talk.context_for_reply(ContextPolicy(), None).places == (0, 1, 2, 3, 4)


def test_each_adapter_sees_only_the_exchanges_it_answered():
    talk = Conversation((*about("q1", adapter="pirate"), *about("q2"), Turn.user("q3")))
    assert talk.context_for_reply(ContextPolicy(), None).places == (2, 3, 4)
    assert talk.context_for_reply(ContextPolicy(), "pirate").places == (0, 1, 4)
    assert talk.context_for_reply(ContextPolicy(same_adapter=False), None).places == (0, 1, 2, 3, 4)
    with_picture = Conversation((*about("q1", ROCKET, "pirate"), *about("q2"), Turn.user("q3")))
    assert with_picture.context_for_reply(ContextPolicy(), None).places == (2, 3, 4)  # the picture's turn was pirate's


def three_turns() -> Conversation:
    talk = Conversation()
    for number in (1, 2, 3):
        talk = talk.with_turn(Turn.user(f"Q{number}")).with_turn(Turn.reply(ReplyVersion(f"A{number}")))
    return talk


def test_an_edit_is_a_new_version_of_the_message_and_the_old_one_keeps_its_later_turns():
    talk = three_turns()
    picture = Media.of("/tmp/gradio/x/cat.png")
    talk = Conversation((Turn.user("Q1", (picture,)), *talk.turns[1:]))
    edited = talk.edited(0, "Q1 again")
    assert [t.text for t in edited.turns] == ["Q1 again"] and edited.turns[0].media == (picture,)
    assert edited.branched() == (0,) and edited.turns[0].shown == 1
    answered = edited.with_turn(Turn.reply(ReplyVersion("B1")))
    back = answered.stepped_branch(0, -1)
    assert back.turns[1:] == talk.turns[1:] and [t.text for t in back.turns] == ["Q1", "A1", "Q2", "A2", "Q3", "A3"]
    assert back.turns[0].branches[1].later == (Turn.reply(ReplyVersion("B1")),)  # kept while the other is shown
    again = back.stepped_branch(0, 1)
    assert [t.text for t in again.turns] == ["Q1 again", "B1"] and again.turns[0].shown == 1
    assert again.stepped_branch(0, 5) == again  # stepping stays in range
    assert again.turns[0].with_text("Q1 said").text == "Q1 said"  # a prompt's copy of the shown version


def test_an_edit_of_a_later_message_keeps_the_earlier_turns_and_branches_nest():
    talk = three_turns().edited(0, "Q1b").with_turn(Turn.reply(ReplyVersion("B1")))
    talk = talk.with_turn(Turn.user("Q2b")).with_turn(Turn.reply(ReplyVersion("B2"))).edited(2, "Q2c")
    assert [t.text for t in talk.turns] == ["Q1b", "B1", "Q2c"] and talk.branched() == (0, 2)
    first = talk.stepped_branch(0, -1)
    assert [t.text for t in first.turns] == ["Q1", "A1", "Q2", "A2", "Q3", "A3"]
    assert [t.text for t in first.stepped_branch(0, 1).turns] == ["Q1b", "B1", "Q2c"]
    with pytest.raises(ValueError, match="only a person's message"):
        talk.branches_at(1)

import pytest
from hypothesis import given, settings, strategies as st

from mbgpu.errors import MbgpuError, NexusError
from mbgpu.nexus.blocks import BlockEvent, Command, check_header, iter_commands
from mbgpu.nexus.tokenizer import Source, tokenize


def toks(text):
    return [(t.kind, t.text) for t in tokenize(Source(text))]


def test_words_punct_and_quotes():
    assert toks("lset nst=6 rates=invg;") == [
        ("word", "lset"), ("word", "nst"), ("punct", "="), ("word", "6"), ("word", "rates"),
        ("punct", "="), ("word", "invg"), ("punct", ";")]
    assert toks("'it''s a taxon' x_y") == [("string", "it's a taxon"), ("word", "x_y")]


def test_nested_comments_are_skipped():
    assert toks("a [outer [inner] still] b") == [("word", "a"), ("word", "b")]


def test_unterminated_comment_is_located():
    with pytest.raises(NexusError) as e:
        tokenize(Source("a\n  [never closed", "f.nex"))
    assert e.value.one_line().startswith("f.nex:2:3: error: unterminated comment")


def test_crlf_and_lf_give_same_positions():
    a = Source("x\r\ny\r\nz", "a")
    b = Source("x\ny\nz", "b")
    ta, tb = tokenize(a), tokenize(b)
    assert [a.where(t.pos)[1:] if False else (a.where(t.pos).line, a.where(t.pos).col) for t in ta] == \
           [(b.where(t.pos).line, b.where(t.pos).col) for t in tb] == [(1, 1), (2, 1), (3, 1)]


def test_header_required():
    with pytest.raises(NexusError, match="must start with #NEXUS"):
        check_header(Source("begin data; end;"))


def test_blocks_and_endblock():
    src = Source("#NEXUS\nbegin mrbayes; set seed=1; endblock;\nBEGIN trees; tree t=(a,b); END;\n")
    items = list(iter_commands(src, check_header(src)))
    assert [(c.block, c.name) for c in items if isinstance(c, Command)] == [("mrbayes", "set"), ("trees", "tree")]
    assert [(e.kind, e.name) for e in items if isinstance(e, BlockEvent)] == [
        ("begin", "mrbayes"), ("end", "mrbayes"), ("begin", "trees"), ("end", "trees")]


def test_unterminated_block():
    src = Source("#NEXUS\nbegin mrbayes;\n set seed=1;\n")
    with pytest.raises(NexusError, match="not closed"):
        list(iter_commands(src, check_header(src)))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#NEXUSbegindatamrbayesend;=,(){}[]:'\"-?.{}\\ \n\r\t01ACGT")),
               max_size=200))
def test_fuzz_tokenizer_raises_only_our_errors(text):
    src = Source(text)
    try:
        tokenize(src)
        list(iter_commands(src, 0))
    except MbgpuError:
        pass

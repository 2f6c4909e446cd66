"""Reference §1.5: title, wikilinks and cleanContent, step by step."""

import pytest

from dle_desktop.core.body import clean_content, estimate_tokens, extract_title, extract_wikilinks

from ._helpers import lore


# ---------------------------------------------------------------- title
def test_title_is_first_h1_anywhere():
    body = "intro line\n## Sub heading\n# Real Title\ntext\n# Second H1"
    assert extract_title(body, "x.md") == "Real Title"


def test_h2_and_hashtag_are_not_titles():
    assert extract_title("## Two\n#tag\ntext", "Folder/My Note.md") == "My Note"


def test_title_link_shows_display_text():
    assert extract_title("# [[Target|Shown]] of [[Plain]]", "x.md") == "Shown of Plain"


def test_title_filename_fallback_strips_md_and_folders():
    assert extract_title("no heading", "Deep/Folder/Angel Crown.md") == "Angel Crown"
    assert extract_title("", "Root.MD") == "Root"
    assert extract_title("", "noext") == "noext"


def test_title_via_parser_ignores_frontmatter_title():
    e = lore("title: Ignored", body="text\n# Found Later\nmore")
    assert e.title == "Found Later"
    assert e.content == "text\nmore"


def test_title_trailing_spaces_trimmed():
    assert extract_title("#   Spaced Title   \nx", "x.md") == "Spaced Title"


# ---------------------------------------------------------------- wikilinks
def test_wikilinks_basic_alias_and_order():
    assert extract_wikilinks("See [[B]] and [[A|the a]] then [[C]].") == ("B", "A", "C")


def test_wikilinks_skip_embeds():
    assert extract_wikilinks("![[image.png]] [[Real]] ![[Other Note]]") == ("Real",)


def test_wikilinks_deduplicated():
    assert extract_wikilinks("[[A]] [[A|again]] [[ A ]]") == ("A",)


def test_wikilinks_trimmed_and_trailing_backslash_stripped():
    # `[[A\|x]]` is how Obsidian writes a link inside a table cell
    assert extract_wikilinks("| [[Table Link\\|shown]] | [[ Spaced ]] |") == ("Table Link", "Spaced")


def test_wikilinks_heading_suffix_kept_whole():
    assert extract_wikilinks("[[A#History]] [[B^block]]") == ("A#History", "B^block")


def test_wikilinks_first_h1_line_excluded():
    body = "# About [[Self Link]]\n[[Body Link]]\n# Another [[H1 Link]]"
    assert extract_wikilinks(body) == ("Body Link", "H1 Link")


def test_wikilinks_empty_when_none():
    assert extract_wikilinks("plain text [single] [[]]") == ()


# ---------------------------------------------------------------- cleanContent steps
def test_step1_exclude_blocks_non_greedy_multiline():
    text = "a %%deeplore-exclude%%x\ny%%/deeplore-exclude%% b %%deeplore-exclude%%z%%/deeplore-exclude%% c"
    assert clean_content(text) == "a  b  c"


def test_step2_inline_comment():
    assert clean_content("Magic always has a cost. %%todo: expand%%") == "Magic always has a cost."


def test_step3_multiline_comment_block():
    assert clean_content("before\n%%\nhidden\nlines\n%%\nafter") == "before\n\nafter"


def test_unterminated_comment_kept():
    assert clean_content("%%\nnot closed") == "%%\nnot closed"


def test_code_spans_not_protected():
    # DLE has no code-span awareness (verified): the comment inside backticks goes too
    assert clean_content("use `%%x%%` here") == "use `` here"


def test_step4_div_tags_removed_text_kept():
    assert clean_content('<div class="meta">\nAge: 40\n</div>\nrest') == "Age: 40\n\nrest"
    assert clean_content("<DIV>upper</DIV>") == "upper"


def test_step5_first_h1_removed_only():
    assert clean_content("line\n# First\nmid\n# Second\nend") == "line\nmid\n# Second\nend"


def test_step6_embeds_and_markdown_images_removed():
    assert clean_content("a ![[pic.png]] b ![alt text](img/x.png) c") == "a  b  c"


def test_markdown_link_without_bang_kept():
    assert clean_content("[site](http://x)") == "[site](http://x)"


def test_step7_links_flattened():
    assert clean_content("[[Bellsummit|the Summit]] and [[Oracles]] and [[A#h]]") == "the Summit and Oracles and A#h"


def test_step8_newlines_collapsed_and_trimmed():
    assert clean_content("\n\n a\n\n\n\n\nb \n\n\n") == "a\n\nb"


def test_crlf_normalised():
    assert clean_content("# T\r\nline1\r\n\r\n\r\n\r\nline2\r\n") == "line1\n\nline2"


def test_exclude_before_comment_steps():
    # an exclude block holding a %% comment must vanish entirely
    text = "keep\n%%deeplore-exclude%%\n%%\nnested\n%%\n%%/deeplore-exclude%%\nend"
    assert clean_content(text) == "keep\n\nend"


def test_h1_inside_exclude_block_is_not_the_removed_one():
    # step 1 runs before step 5: the excluded H1 is gone, the next H1 is removed
    text = "%%deeplore-exclude%%\n# Hidden\n%%/deeplore-exclude%%\n# Visible\nbody"
    assert clean_content(text) == "body"


def test_estimate_tokens_is_ceil_quarter():
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


@pytest.mark.parametrize("body", ["", "   ", "\n\n", "# Only Title"])
def test_empty_content_results(body):
    assert clean_content(body) == ""


def test_full_body_through_parser():
    body = (
        "Intro for [[Place|a place]].\n"
        "# Heading Title\n"
        "<div>Age: 30</div>\n"
        "%% secret %%\n"
        "![[map.png]]\n\n\n\n"
        "See [[Other]]."
    )
    e = lore(body=body)
    assert e.title == "Heading Title"
    assert e.links == ("Place", "Other")
    # the comment and embed lines leave blank lines, collapsed to one paragraph break
    assert e.content == "Intro for a place.\nAge: 30\n\nSee Other."

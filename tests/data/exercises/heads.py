"""Exercise 4 solved, and the usual wrong versions."""


def split_heads(x, num_heads):
    b, length, width = x.shape
    return x.view(b, length, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x):
    b, heads, length, width = x.shape
    return x.transpose(1, 2).reshape(b, length, heads * width)


def _split_reshape(x, num_heads):
    b, length, width = x.shape
    return x.reshape(b, num_heads, length, width // num_heads)


def _split_interleaved(x, num_heads):
    b, length, width = x.shape
    return x.view(b, length, width // num_heads, num_heads).permute(0, 3, 1, 2)


def _split_no_transpose(x, num_heads):
    b, length, width = x.shape
    return x.view(b, length, num_heads, width // num_heads)


def _merge_view(x):
    b, heads, length, width = x.shape
    return x.transpose(1, 2).view(b, length, heads * width)


WRONG = {
    "split_reshape": {"split_heads": _split_reshape},
    "split_interleaved": {"split_heads": _split_interleaved},
    "split_no_transpose": {"split_heads": _split_no_transpose},
    "merge_no_transpose": {"merge_heads": lambda x: x.reshape(x.shape[0], x.shape[2], -1)},
    "merge_interleaved": {"merge_heads": lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1)},
    "view_after_transpose": {"merge_heads": _merge_view},
}

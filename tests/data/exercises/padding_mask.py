"""Exercise 3 solved, and the usual wrong versions."""


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]


WRONG = {
    "padding_inverted": {"padding_mask": lambda tokens, pad_id: (tokens == pad_id)[:, None, None, :]},
    "pad_id_ignored": {"padding_mask": lambda tokens, pad_id: (tokens != 0)[:, None, None, :]},
    "no_broadcast_dims": {"padding_mask": lambda tokens, pad_id: tokens != pad_id},
    "mask_on_queries": {"padding_mask": lambda tokens, pad_id: (tokens != pad_id)[:, None, :, None]},
    "not_bool": {"padding_mask": lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :].long()},
}

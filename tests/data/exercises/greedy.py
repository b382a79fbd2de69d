"""Exercise 8 solved, and the usual wrong versions."""

import torch

from minitrans.data.tokenizer import BOS_ID, EOS_ID


@torch.no_grad()
def greedy_decode(model, src, max_len, stop=True, keep_bos=False, keep_eos=False, position=-1, limit=0):
    enc, _ = model.encode(src)
    ys = [BOS_ID]
    for _ in range(max_len + limit):
        logits, _ = model.decode(enc, torch.tensor([ys]))
        token = int(logits[0, position].argmax())
        if token == EOS_ID and stop:
            if keep_eos:
                ys.append(token)
            break
        ys.append(token)
    return ys if keep_bos else ys[1:]


@torch.no_grad()
def _no_limit(model, src, max_len):
    enc, _ = model.encode(src)
    ys = [BOS_ID]
    while ys[-1] != EOS_ID:
        ys.append(int(model.decode(enc, torch.tensor([ys]))[0][0, -1].argmax()))
    return ys[1:-1]


def wrong(**how):
    return {"greedy_decode": lambda model, src, max_len: greedy_decode(model, src, max_len, **how)}


WRONG = {
    "no_stop_at_eos": wrong(stop=False),
    "eos_included": wrong(keep_eos=True),
    "bos_included": wrong(keep_bos=True),
    "first_position": wrong(position=0),
    "max_len_off_by_one": wrong(limit=1),
    "no_limit": {"greedy_decode": _no_limit},
    "not_a_list": {"greedy_decode": lambda model, src, max_len: None},
}

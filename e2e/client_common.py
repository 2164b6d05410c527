"""What the Python clients of the end-to-end tests share: their command line, the
OpenAI client they connect with, and the check that bad requests are refused with 400."""

import argparse

import openai
from openai import OpenAI


def parse_args(*int_flags):
    """Parses --base-url, --model and the given required integer flags."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    for flag in int_flags:
        ap.add_argument(flag, type=int, required=True)
    return ap.parse_args()


def connect(args):
    """An OpenAI client of the server at args.base_url: no retries, a long timeout."""
    return OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=600)


def expect_bad_requests(create, cases, check):
    """Calls create(**kwargs) for each (kwargs, want) of cases: each must fail with a
    400 BadRequestError, which check(error, want) then inspects."""
    for kwargs, want in cases:
        try:
            create(**kwargs)
        except openai.BadRequestError as e:
            assert e.status_code == 400, e
            check(e, want)
        else:
            raise AssertionError(f"no error for {kwargs}")

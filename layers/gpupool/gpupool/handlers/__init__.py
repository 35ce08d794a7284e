"""Cloud function handlers, shared by functions/*: the body (``common``) and its Lambda
(``aws_lambda``) and Function Compute (``fc``) flavours.

Must not: import either flavour here (each function imports only its own cloud's).
"""

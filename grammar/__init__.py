"""The rlx grammar, shipped as package data (`rlx.lark`)."""

"""The part of Chakra's execution-trace schema that ccxml writes and reads, built in code.

Chakra (github.com/mlcommons/chakra, ``schema/protobuf/et_def.proto``, package
``ChakraProtoMsg``) defines the messages ASTRA-sim reads. This module declares the same package,
message names, field names, numbers and types for the messages a collective's trace uses —
``AttributeProto`` (its scalar values), ``GlobalMetadata``, ``NodeType``, ``Node`` and ``IOInfo``
— so that what it encodes is what a program built from chakra's ``.proto`` decodes, byte for
byte (tests/export/test_chakra.py decodes the upstream converter's files with it and encodes
them back identically). The list-valued attributes (``int32_list`` ...) are left out: a file that
holds them still decodes, their fields kept as unknown fields.

The descriptor is built at run time from a ``FileDescriptorProto`` written here, instead of a
``protoc``-generated ``_pb2`` module: generated code checks the ``protobuf`` runtime's version
against the ``protoc`` that wrote it, a descriptor built in code works with every ``protobuf``
from 4.21 on. ``protobuf`` is imported when a trace is written or read, not before
(``pip install 'ccxml[chakra]'``).

A trace file (chakra ``src/third_party/utils/protolib.py``, ``encodeMessage``) is a sequence of
messages, each preceded by its length as a varint: one ``GlobalMetadata``, then the ``Node``\\ s.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator
from types import SimpleNamespace

PACKAGE = "ChakraProtoMsg"

#: NodeType values (et_def.proto)
NODE_TYPES = {"INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3,
              "COMP_NODE": 4, "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7}
COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE = 4, 5, 6

#: AttributeProto's scalar ``value`` fields: (name, number, descriptor type name)
ATTRIBUTE_VALUES = (
    ("double_val", 3, "TYPE_DOUBLE"), ("float_val", 5, "TYPE_FLOAT"), ("int32_val", 7, "TYPE_INT32"),
    ("int64_val", 9, "TYPE_INT64"), ("uint32_val", 11, "TYPE_UINT32"), ("uint64_val", 13, "TYPE_UINT64"),
    ("sint32_val", 15, "TYPE_SINT32"), ("sint64_val", 17, "TYPE_SINT64"),
    ("fixed32_val", 19, "TYPE_FIXED32"), ("fixed64_val", 21, "TYPE_FIXED64"),
    ("sfixed32_val", 23, "TYPE_SFIXED32"), ("sfixed64_val", 25, "TYPE_SFIXED64"),
    ("bool_val", 27, "TYPE_BOOL"), ("string_val", 29, "TYPE_STRING"), ("bytes_val", 31, "TYPE_BYTES"),
)

#: the messages: name -> [(field, number, type, label, message or enum type name)]
_MESSAGES: dict[str, list[tuple[str, int, str, str, str | None]]] = {
    "AttributeProto": [("name", 1, "TYPE_STRING", "OPTIONAL", None),
                       ("doc_string", 2, "TYPE_STRING", "OPTIONAL", None)],
    "GlobalMetadata": [("version", 1, "TYPE_STRING", "OPTIONAL", None),
                       ("attr", 2, "TYPE_MESSAGE", "REPEATED", "AttributeProto")],
    "Node": [("id", 1, "TYPE_UINT64", "OPTIONAL", None), ("name", 2, "TYPE_STRING", "OPTIONAL", None),
             ("type", 3, "TYPE_ENUM", "OPTIONAL", "NodeType"),
             ("ctrl_deps", 4, "TYPE_UINT64", "REPEATED", None),
             ("data_deps", 5, "TYPE_UINT64", "REPEATED", None),
             ("start_time_micros", 6, "TYPE_UINT64", "OPTIONAL", None),
             ("duration_micros", 7, "TYPE_UINT64", "OPTIONAL", None),
             ("inputs", 8, "TYPE_MESSAGE", "OPTIONAL", "IOInfo"),
             ("outputs", 9, "TYPE_MESSAGE", "OPTIONAL", "IOInfo"),
             ("attr", 10, "TYPE_MESSAGE", "REPEATED", "AttributeProto")],
    "IOInfo": [("values", 1, "TYPE_STRING", "OPTIONAL", None), ("shapes", 2, "TYPE_STRING", "OPTIONAL", None),
               ("types", 3, "TYPE_STRING", "OPTIONAL", None)],
}


class MissingProtobuf(ImportError):
    """The ``protobuf`` package is not installed."""


@functools.cache
def messages() -> SimpleNamespace:
    """The message classes (``AttributeProto``, ``GlobalMetadata``, ``Node``, ``IOInfo``), built
    once per process in a private descriptor pool. Raises :class:`MissingProtobuf`."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        raise MissingProtobuf("Chakra traces need protobuf: pip install 'ccxml[chakra]'") from None
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="ccxml/chakra_et_def.proto", package=PACKAGE,
                                             syntax="proto3")
    enum = fdp.enum_type.add(name="NodeType")
    for name, number in NODE_TYPES.items():
        enum.value.add(name=name, number=number)
    for mname, fields in _MESSAGES.items():
        m = fdp.message_type.add(name=mname)
        for fname, number, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=getattr(F, ftype),
                            label=getattr(F, "LABEL_" + label), json_name=_camel(fname))
            if type_name:
                f.type_name = f".{PACKAGE}.{type_name}"
        if mname == "AttributeProto":
            m.oneof_decl.add(name="value")
            for fname, number, ftype in ATTRIBUTE_VALUES:
                m.field.add(name=fname, number=number, type=getattr(F, ftype), label=F.LABEL_OPTIONAL,
                            oneof_index=0, json_name=_camel(fname))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is None:                      # protobuf 4.21 (GetMessageClass came in 4.22)
        get = message_factory.MessageFactory(pool).GetPrototype
    return SimpleNamespace(**{name: get(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
                              for name in _MESSAGES})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf varint."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(0x80 | low)
        else:
            out.append(low)
            return bytes(out)


def frame(message) -> bytes:
    """One message as a trace file holds it: its length as a varint, then its bytes."""
    data = message.SerializeToString(deterministic=True)
    return varint(len(data)) + data


def frames(data: bytes) -> Iterator[bytes]:
    """The messages of a trace file, each as its bytes (ValueError on a truncated file)."""
    at, end = 0, len(data)
    while at < end:
        size = shift = 0
        while True:
            if at >= end or shift > 63:
                raise ValueError(f"truncated length at byte {at}")
            b = data[at]
            at += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if at + size > end:
            raise ValueError(f"a message of {size} bytes runs past the end of the file at byte {at}")
        yield data[at:at + size]
        at += size


def decode(data: bytes):
    """(GlobalMetadata, [Node]) of a trace file's bytes."""
    m = messages()
    it = frames(data)
    meta = m.GlobalMetadata()
    first = next(it, None)
    if first is None:
        raise ValueError("empty trace file")
    meta.ParseFromString(first)
    nodes = []
    for raw in it:
        node = m.Node()
        node.ParseFromString(raw)
        nodes.append(node)
    return meta, nodes


def attr_value(attr):
    """The value an AttributeProto holds (None when it holds none)."""
    which = attr.WhichOneof("value")
    return None if which is None else getattr(attr, which)

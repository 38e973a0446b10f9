//! Our JSON writer: compact JSON, byte for byte what `serde_json::to_writer` writes, with
//! strings written a run at a time.
//!
//! serde_json looks up every byte of a string in a table before it copies the run; on a 1 MiB
//! tool result that loop was about 70% of encoding. Here the next byte that needs an escape is
//! found 16 bytes at a time ([`scan::needs_escape`]) and the plain run before it is copied
//! whole. Everything else about the output is serde_json's: the same compact form, the same
//! escapes (`\"`, `\\`, `\b \f \n \r \t`, `\u00xx` for the other control characters, nothing
//! else escaped), floats and non-string map keys written the way it writes them, and the
//! verbatim text of a `RawValue` (a [`RawJson`](crate::RawJson)) copied as is. The tests hold
//! the byte equality.
//!
//! It writes into a `String` or a `Vec<u8>` ([`Out`]), so that a result is encoded straight
//! into the buffer that keeps it and never checked for UTF-8 again.

#[cfg(test)]
mod tests;

use serde::ser::{self, Serialize};

use crate::scan;

/// The name under which serde_json's `RawValue` serializes itself: a struct of this name with
/// one string member is JSON text to copy as is. serde_json's serializers and `to_value` know
/// it; so must ours, for a `RawJson` inside a message to come out unchanged. `RawJson`
/// serializes itself under this name too. A test compares with serde_json's own `RawValue`
/// and checks the raw text comes out verbatim, so a change of the name on their side fails it.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A buffer JSON text is appended to. Only ever given whole UTF-8 text, so a `String` stays a
/// `String` with no check.
pub(crate) trait Out {
    fn put(&mut self, text: &str);
    /// Makes room for `more` bytes: a long string grows the buffer once, not by doubling.
    fn reserve(&mut self, more: usize);
}

impl Out for String {
    #[inline]
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }
    #[inline]
    fn reserve(&mut self, more: usize) {
        String::reserve(self, more);
    }
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, text: &str) {
        self.extend_from_slice(text.as_bytes());
    }
    #[inline]
    fn reserve(&mut self, more: usize) {
        Vec::reserve(self, more);
    }
}

/// Encodes `value` into a new string.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    to_string_sized(value, 128)
}

/// Encodes `value` into a new string made with room for `capacity` bytes: a caller that can
/// tell the size roughly spares the buffer its doublings, each a copy into new memory.
pub(crate) fn to_string_sized<T: Serialize + ?Sized>(
    value: &T,
    capacity: usize,
) -> Result<String, serde_json::Error> {
    let mut out = String::with_capacity(capacity);
    value.serialize(&mut Writer { out: &mut out })?;
    Ok(out)
}

/// Appends the encoding of `value` to `out`. On an error `out` may hold part of it.
pub(crate) fn extend<O: Out, T: Serialize + ?Sized>(
    out: &mut O,
    value: &T,
) -> Result<(), serde_json::Error> {
    value.serialize(&mut Writer { out })
}

/// The escape of each control character, as serde_json writes it: the short forms where JSON
/// has one, else `\u00xx` with lower-case hex digits.
const CONTROL: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b",
    "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012",
    "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a",
    "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

/// Writes `text` as a JSON string, quotes included.
pub(crate) fn write_str<O: Out + ?Sized>(out: &mut O, text: &str) {
    // Enough when nothing needs an escape, which is the rule, and for the few brackets that
    // usually close a long text's value: growing a megabyte buffer again would copy it.
    out.reserve(text.len() + 2 + if text.len() > 4096 { 256 } else { 0 });
    out.put("\"");
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(at) = scan::needs_escape(bytes, start) {
        // `at` is an ASCII byte, so both slices end on a character boundary.
        if let Some(run) = text.get(start..at) {
            out.put(run);
        }
        out.put(match bytes[at] {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b => CONTROL[usize::from(b & 0x1f)],
        });
        start = at + 1;
    }
    if let Some(run) = text.get(start..) {
        out.put(run);
    }
    out.put("\"");
}

/// Writes an unsigned integer in decimal, without an allocation.
fn write_u64<O: Out + ?Sized>(out: &mut O, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    if let Ok(text) = std::str::from_utf8(&digits[at..]) {
        out.put(text);
    }
}

fn write_i64<O: Out + ?Sized>(out: &mut O, n: i64) {
    if n < 0 {
        out.put("-");
    }
    write_u64(out, n.unsigned_abs());
}

/// A float as serde_json writes it (`null` when not finite): its float formatting is its own
/// choice of algorithm, so it is asked rather than imitated. Floats are rare in MCP traffic.
fn write_float<O: Out + ?Sized, F: Serialize>(
    out: &mut O,
    value: F,
) -> Result<(), serde_json::Error> {
    out.put(&serde_json::to_string(&value)?);
    Ok(())
}

fn key_must_be_a_string() -> serde_json::Error {
    ser::Error::custom("key must be a string")
}

/// The serializer: compact JSON into `out`.
struct Writer<'o, O: ?Sized> {
    out: &'o mut O,
}

/// An array or object being written; `first` is whether no element has been written yet.
enum Compound<'a, 'o, O: ?Sized> {
    Plain {
        w: &'a mut Writer<'o, O>,
        first: bool,
    },
    /// serde_json's `RawValue`: its one member is the text to copy.
    Raw { w: &'a mut Writer<'o, O> },
}

impl<'a, 'o, O: Out + ?Sized> Compound<'a, 'o, O> {
    fn comma(&mut self) {
        if let Self::Plain { w, first } = self {
            if *first {
                *first = false;
            } else {
                w.out.put(",");
            }
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        self.comma();
        match self {
            Self::Plain { w, .. } | Self::Raw { w } => value.serialize(&mut **w),
        }
    }

    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), serde_json::Error> {
        self.comma();
        match self {
            Self::Plain { w, .. } | Self::Raw { w } => {
                key.serialize(KeyWriter { out: &mut *w.out })
            }
        }
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        match self {
            Self::Plain { w, .. } | Self::Raw { w } => {
                w.out.put(":");
                value.serialize(&mut **w)
            }
        }
    }

    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        match self {
            Self::Raw { w } => value.serialize(RawWriter { out: &mut *w.out }),
            Self::Plain { .. } => {
                self.comma();
                if let Self::Plain { w, .. } = self {
                    write_str(w.out, key);
                }
                self.value(value)
            }
        }
    }

    fn close(self, end: &str) {
        if let Self::Plain { w, .. } = self {
            w.out.put(end);
        }
    }
}

impl<'a, 'o, O: Out + ?Sized> Writer<'o, O> {
    fn open(&'a mut self, start: &str) -> Compound<'a, 'o, O> {
        self.out.put(start);
        Compound::Plain {
            w: self,
            first: true,
        }
    }

    /// `{"variant":` of an externally tagged enum variant.
    fn tag(&mut self, variant: &str) {
        self.out.put("{");
        write_str(self.out, variant);
        self.out.put(":");
    }
}

impl<'a, 'o, O: Out + ?Sized> ser::Serializer for &'a mut Writer<'o, O> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Compound<'a, 'o, O>;
    type SerializeTuple = Compound<'a, 'o, O>;
    type SerializeTupleStruct = Compound<'a, 'o, O>;
    type SerializeTupleVariant = Compound<'a, 'o, O>;
    type SerializeMap = Compound<'a, 'o, O>;
    type SerializeStruct = Compound<'a, 'o, O>;
    type SerializeStructVariant = Compound<'a, 'o, O>;

    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.out.put(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        write_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        write_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        write_i64(self.out, v.into());
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        write_i64(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Self::Error> {
        self.out.put(&v.to_string());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        write_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        write_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        write_u64(self.out, v.into());
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        write_u64(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Self::Error> {
        self.out.put(&v.to_string());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        write_float(self.out, v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        write_float(self.out, v)
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        write_str(self.out, v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Self::Error> {
        let mut seq = self.open("[");
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        seq.close("]");
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        self.out.put("null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        self.out.put("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Self::Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.tag(variant);
        value.serialize(&mut *self)?;
        self.out.put("}");
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Ok(self.open("["))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        self.tag(variant);
        Ok(self.open("["))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Ok(self.open("{"))
    }
    fn serialize_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        if name == RAW_VALUE_TOKEN {
            return Ok(Compound::Raw { w: self });
        }
        Ok(self.open("{"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        self.tag(variant);
        Ok(self.open("{"))
    }
}

impl<O: Out + ?Sized> ser::SerializeSeq for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("]");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeTuple for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("]");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeTupleStruct for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("]");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeTupleVariant for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("]}");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeMap for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.value(value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("}");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeStruct for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("}");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::SerializeStructVariant for Compound<'_, '_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Self::Error> {
        self.close("}}");
        Ok(())
    }
}

/// The methods of a serializer that only takes one kind of value: each refuses with `$err`.
macro_rules! refuse {
    ($err:expr; $( $method:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty; )*) => {
        $(
            fn $method(self, $(_: $ty),*) -> Result<$ret, Self::Error> {
                Err($err)
            }
        )*
    };
}

/// An object key: a string, or (as serde_json allows) a number or a bool, written quoted.
struct KeyWriter<'o, O: ?Sized> {
    out: &'o mut O,
}

impl<O: Out + ?Sized> KeyWriter<'_, O> {
    fn quoted(self, text: &str) -> Result<(), serde_json::Error> {
        self.out.put("\"");
        self.out.put(text);
        self.out.put("\"");
        Ok(())
    }
}

impl<O: Out + ?Sized> ser::Serializer for KeyWriter<'_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = ser::Impossible<(), serde_json::Error>;
    type SerializeTuple = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
    type SerializeMap = ser::Impossible<(), serde_json::Error>;
    type SerializeStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Self::Error> {
        self.serialize_str(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_bool(self, v: bool) -> Result<(), Self::Error> {
        self.quoted(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Self::Error> {
        self.quoted(&v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Self::Error> {
        if !v.is_finite() {
            return Err(ser::Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(&serde_json::to_string(&v)?)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Self::Error> {
        if !v.is_finite() {
            return Err(ser::Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(&serde_json::to_string(&v)?)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Self::Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Self::Error> {
        Err(key_must_be_a_string())
    }
    refuse! { key_must_be_a_string();
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(n: &'static str) -> ();
        serialize_seq(l: Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(l: usize) -> Self::SerializeTuple;
        serialize_tuple_struct(n: &'static str, l: usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(n: &'static str, i: u32, v: &'static str, l: usize) -> Self::SerializeTupleVariant;
        serialize_map(l: Option<usize>) -> Self::SerializeMap;
        serialize_struct(n: &'static str, l: usize) -> Self::SerializeStruct;
        serialize_struct_variant(n: &'static str, i: u32, v: &'static str, l: usize) -> Self::SerializeStructVariant;
    }
}

/// The one member of a `RawValue`: JSON text, copied as is.
struct RawWriter<'o, O: ?Sized> {
    out: &'o mut O,
}

fn not_raw() -> serde_json::Error {
    ser::Error::custom("a raw JSON value must be text")
}

impl<O: Out + ?Sized> ser::Serializer for RawWriter<'_, O> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = ser::Impossible<(), serde_json::Error>;
    type SerializeTuple = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = ser::Impossible<(), serde_json::Error>;
    type SerializeMap = ser::Impossible<(), serde_json::Error>;
    type SerializeStruct = ser::Impossible<(), serde_json::Error>;
    type SerializeStructVariant = ser::Impossible<(), serde_json::Error>;

    fn serialize_str(self, v: &str) -> Result<(), Self::Error> {
        self.out.put(v);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<(), Self::Error> {
        Err(not_raw())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Self::Error> {
        Err(not_raw())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Self::Error> {
        Err(not_raw())
    }
    refuse! { not_raw();
        serialize_bool(v: bool) -> ();
        serialize_i8(v: i8) -> ();
        serialize_i16(v: i16) -> ();
        serialize_i32(v: i32) -> ();
        serialize_i64(v: i64) -> ();
        serialize_i128(v: i128) -> ();
        serialize_u8(v: u8) -> ();
        serialize_u16(v: u16) -> ();
        serialize_u32(v: u32) -> ();
        serialize_u64(v: u64) -> ();
        serialize_u128(v: u128) -> ();
        serialize_f32(v: f32) -> ();
        serialize_f64(v: f64) -> ();
        serialize_char(v: char) -> ();
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(n: &'static str) -> ();
        serialize_unit_variant(n: &'static str, i: u32, v: &'static str) -> ();
        serialize_seq(l: Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(l: usize) -> Self::SerializeTuple;
        serialize_tuple_struct(n: &'static str, l: usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(n: &'static str, i: u32, v: &'static str, l: usize) -> Self::SerializeTupleVariant;
        serialize_map(l: Option<usize>) -> Self::SerializeMap;
        serialize_struct(n: &'static str, l: usize) -> Self::SerializeStruct;
        serialize_struct_variant(n: &'static str, i: u32, v: &'static str, l: usize) -> Self::SerializeStructVariant;
    }
}

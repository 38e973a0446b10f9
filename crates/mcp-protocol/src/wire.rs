//! The machinery that lets every wire type keep the members it does not know.
//!
//! A proxy must lose nothing: a `Tool` that a newer server sends with a member this crate has
//! never heard of must come out of `decode → encode` with that member intact. serde's
//! `#[serde(flatten)]` would do it, but it buffers every object into an intermediate tree first,
//! which roughly doubles decode time on large `tools/list` results. The macros here generate
//! direct `Serialize`/`Deserialize` impls instead: known keys go to typed fields, the rest to
//! `extra`, in one pass.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde_json::Value;

/// A JSON object: the members of a wire type that this version of the crate does not know, and
/// free-form objects such as tool arguments.
pub type JsonObject = serde_json::Map<String, Value>;

/// An object key, borrowed from the input whenever the deserializer allows it.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Implemented by every struct that `wire_struct!` generates, so that a tagged enum can write the
/// tag and then the variant's members into one JSON object.
pub(crate) trait WireFields {
    /// How many members `serialize_fields` writes.
    fn field_count(&self) -> usize;
    /// Writes the members into an object that the caller has opened.
    fn serialize_fields<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

/// One page of a list result (`tools/list` and the like) whose items the caller keeps: it
/// encodes as the owned result with the same items and cursor, and no `_meta`, would
/// (`{"<key>":[...],"nextCursor":"..."}`), without a copy of each item first.
pub(crate) struct PageRef<'a, T> {
    /// The member that holds the items: `tools`, `resources`, ...
    pub(crate) key: &'static str,
    pub(crate) items: &'a [T],
    pub(crate) next_cursor: Option<&'a str>,
}

/// The most [`PageRef::encode`] reserves up front, whatever its guess: past it the buffer
/// grows by doubling, as any other does.
const MAX_PAGE_GUESS: usize = 4 << 20;

impl<T: serde::Serialize> PageRef<'_, T> {
    /// Encodes the page into a buffer sized from its first item (its length times the number
    /// of items, up to 4 MiB), not grown from 128 bytes: a page of 500 tools (80 KB) took
    /// ten doublings, each a copy into new memory, and the page faults of that memory were
    /// about half the time of encoding it.
    pub(crate) fn encode(&self) -> Result<crate::jsonrpc::RawJson, serde_json::Error> {
        crate::json_out::to_string_sized(self, self.capacity()?)
            .map(crate::jsonrpc::RawJson::from_encoded)
    }

    /// The room reserved for the page: its first item's length (and a comma) times the
    /// number of items, plus room for the key and the cursor, at most [`MAX_PAGE_GUESS`].
    fn capacity(&self) -> Result<usize, serde_json::Error> {
        let guess = match self.items.first() {
            Some(first) => crate::json_out::to_string(first)?
                .len()
                .saturating_add(1)
                .saturating_mul(self.items.len()),
            None => 0,
        };
        let cursor = self.next_cursor.map_or(0, str::len);
        Ok(guess
            .saturating_add(cursor)
            .saturating_add(64)
            .min(MAX_PAGE_GUESS))
    }
}

impl<T: serde::Serialize> serde::Serialize for PageRef<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map =
            serializer.serialize_map(Some(1 + usize::from(self.next_cursor.is_some())))?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(cursor) = self.next_cursor {
            map.serialize_entry("nextCursor", cursor)?;
        }
        map.end()
    }
}

/// Reads the next value of a map into `slot`, refusing a key that appears twice.
pub(crate) fn fill<'de, A, T>(
    map: &mut A,
    slot: &mut Option<T>,
    key: &'static str,
) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    T: de::Deserialize<'de>,
{
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// Like [`fill`] for an optional member: an explicit `null` counts as absent.
pub(crate) fn fill_opt<'de, A, T>(
    map: &mut A,
    slot: &mut Option<T>,
    seen: &mut bool,
    key: &'static str,
) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    T: de::Deserialize<'de>,
{
    if *seen {
        return Err(de::Error::duplicate_field(key));
    }
    *seen = true;
    *slot = map.next_value::<Option<T>>()?;
    Ok(())
}

/// Declares a wire struct whose unknown members survive a round trip.
///
/// Required members must be present on decode; optional ones are skipped on encode when `None`
/// and treat `null` as absent. `new` takes the required members.
macro_rules! wire_struct {
    // With no required members the type also has a `Default`: all absent.
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            required {}
            optional { $($opt:tt)* }
        }
    ) => {
        $crate::wire::wire_struct! { @define $(#[$meta])* pub struct $name { required {} optional { $($opt)* } } }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            required { $($req:tt)* }
            optional { $($opt:tt)* }
        }
    ) => {
        $crate::wire::wire_struct! { @define $(#[$meta])* pub struct $name { required { $($req)* } optional { $($opt)* } } }
    };
    (
        @define
        $(#[$meta:meta])*
        pub struct $name:ident {
            required {
                $( $(#[$rmeta:meta])* $rfield:ident : $rty:ty = $rkey:literal, )*
            }
            optional {
                $( $(#[$ometa:meta])* $ofield:ident : $oty:ty = $okey:literal, )*
            }
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            $( $(#[$rmeta])* pub $rfield: $rty, )*
            $( $(#[$ometa])* pub $ofield: Option<$oty>, )*
            /// Members this version of the crate does not know, kept so that nothing is lost.
            pub extra: $crate::wire::JsonObject,
        }

        impl $name {
            /// Builds the value from its required members; optional ones start absent.
            #[allow(clippy::new_without_default, clippy::too_many_arguments)]
            pub fn new($( $rfield: $rty ),*) -> Self {
                Self {
                    $( $rfield, )*
                    $( $ofield: None, )*
                    extra: $crate::wire::JsonObject::new(),
                }
            }
        }

        impl $crate::wire::WireFields for $name {
            fn field_count(&self) -> usize {
                let mut n = self.extra.len();
                $( let _ = stringify!($rfield); n += 1; )*
                $( if self.$ofield.is_some() { n += 1; } )*
                n
            }

            fn serialize_fields<M: ::serde::ser::SerializeMap>(
                &self,
                map: &mut M,
            ) -> Result<(), M::Error> {
                $( map.serialize_entry($rkey, &self.$rfield)?; )*
                $( if let Some(v) = &self.$ofield { map.serialize_entry($okey, v)?; } )*
                for (k, v) in &self.extra {
                    map.serialize_entry(k, v)?;
                }
                Ok(())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                use $crate::wire::WireFields as _;
                let mut map = serializer.serialize_map(Some(self.field_count()))?;
                self.serialize_fields(&mut map)?;
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct FieldsVisitor;
                impl<'de> ::serde::de::Visitor<'de> for FieldsVisitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " object"))
                    }
                    #[allow(unused_mut)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        $( let mut $rfield: Option<$rty> = None; )*
                        $( let mut $ofield: (Option<$oty>, bool) = (None, false); )*
                        let mut extra = $crate::wire::JsonObject::new();
                        while let Some(key) = map.next_key::<$crate::wire::Key<'de>>()? {
                            match key.as_str() {
                                $( $rkey => $crate::wire::fill(&mut map, &mut $rfield, $rkey)?, )*
                                $( $okey => $crate::wire::fill_opt(&mut map, &mut $ofield.0, &mut $ofield.1, $okey)?, )*
                                _ => {
                                    let value: ::serde_json::Value = map.next_value()?;
                                    extra.insert(key.into_string(), value);
                                }
                            }
                        }
                        Ok($name {
                            $( $rfield: $rfield.ok_or_else(|| <A::Error as ::serde::de::Error>::missing_field($rkey))?, )*
                            $( $ofield: $ofield.0, )*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(FieldsVisitor)
            }
        }
    };
}

/// Declares a string enum whose unknown values survive a round trip as `Other`.
macro_rules! wire_str_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $s:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this version of the crate does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// The value as it appears on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $s, )*
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $s => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let key = <$crate::wire::Key<'de> as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::from(key.as_str()))
            }
        }
    };
}

/// Declares an enum tagged by its `type` member. Unknown tags are kept whole in `Unknown`.
///
/// Decoding reads the object once into a map, picks the variant by the tag, and converts the
/// rest: never "try each variant in turn".
macro_rules! wire_tagged_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) = $tag:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )*
            /// A kind this version of the crate does not know: the whole object, tag included.
            Unknown($crate::wire::JsonObject),
        }

        impl $name {
            /// The `type` tag as it appears on the wire.
            pub fn kind(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $tag, )*
                    Self::Unknown(obj) => obj.get("type").and_then(|t| t.as_str()).unwrap_or(""),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                use $crate::wire::WireFields as _;
                match self {
                    $( Self::$variant(v) => {
                        let mut map = serializer.serialize_map(Some(1 + v.field_count()))?;
                        map.serialize_entry("type", $tag)?;
                        v.serialize_fields(&mut map)?;
                        map.end()
                    } )*
                    Self::Unknown(obj) => obj.serialize(serializer),
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use ::serde::de::Error as _;
                let mut obj = <$crate::wire::JsonObject as ::serde::Deserialize>::deserialize(deserializer)?;
                let tag = match obj.remove("type") {
                    Some(::serde_json::Value::String(s)) => s,
                    Some(_) => return Err(D::Error::custom(concat!("`type` of ", stringify!($name), " is not a string"))),
                    None => return Err(D::Error::missing_field("type")),
                };
                match tag.as_str() {
                    $( $tag => {
                        <$ty as ::serde::Deserialize>::deserialize(::serde_json::Value::Object(obj))
                            .map(Self::$variant)
                            .map_err(|e| D::Error::custom(format_args!(concat!("invalid `", $tag, "` ", stringify!($name), ": {}"), e)))
                    } )*
                    _ => {
                        obj.insert("type".to_owned(), ::serde_json::Value::String(tag));
                        Ok(Self::Unknown(obj))
                    }
                }
            }
        }
    };
}

pub(crate) use {wire_str_enum, wire_struct, wire_tagged_enum};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_page_reserves_about_what_it_encodes_to_and_no_more_than_the_cap() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"name": format!("tool_{i:05}"), "schema": {"type": "object"}}))
            .collect();
        let page = PageRef {
            key: "tools",
            items: &items,
            next_cursor: Some("500"),
        };
        let encoded = page.encode().unwrap();
        let reserved = page.capacity().unwrap();
        assert!(
            reserved >= encoded.get().len() && reserved <= encoded.get().len() * 11 / 10,
            "reserved {reserved} bytes for {}",
            encoded.get().len()
        );
        assert_eq!(encoded.get(), crate::RawJson::encode(&page).unwrap().get());

        // A huge first item does not make a huge reservation.
        let huge = vec![Value::String("x".repeat(1 << 20)); 500];
        let page = PageRef {
            key: "tools",
            items: &huge,
            next_cursor: None,
        };
        assert_eq!(page.capacity().unwrap(), MAX_PAGE_GUESS);
        let empty = PageRef::<Value> {
            key: "tools",
            items: &[],
            next_cursor: None,
        };
        assert_eq!(empty.encode().unwrap().get(), r#"{"tools":[]}"#);
    }
}

//! Fields read only in the JSON shape their schema states.
//!
//! serde's derived `Deserialize` is more lenient than the JSON Schemas schemars derives
//! from the same types: a struct also takes a sequence and fills its fields in order
//! (`"options": [null, null]` would read as options with nothing set), and a unit-only
//! enum also takes a one-key object (`"permissionMode": {"plan": null}` would read as
//! `plan`). The schemas (and docs/PROTOCOL.md) say an object and a string. Request
//! fields of those types name one of these with `deserialize_with`, so anything else
//! is refused like any other value of the wrong type, and the server takes exactly
//! what its OpenAPI document allows.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Takes a map and hands it to `T`'s own `Deserialize`; anything else is refused as
/// "invalid type: ..., expected an object".
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// A struct field: a JSON object only.
pub fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(ObjectVisitor(PhantomData))
}

/// `null` as `None`, else a JSON object.
struct OptionVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        object(d).map(Some)
    }
}

/// An optional struct field: `null` (or, with `#[serde(default)]`, absent) is `None`,
/// anything else must be a JSON object.
pub fn object_opt<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    d.deserialize_option(OptionVisitor(PhantomData))
}

/// One item of [`objects`]: a JSON object.
struct Item<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Item<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(Item)
    }
}

/// A list of objects.
struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // Capped: the hint comes from the input.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(Item(item)) = seq.next_element::<Item<T>>()? {
            out.push(item);
        }
        Ok(out)
    }
}

/// A list field whose items are structs: a JSON array of objects only.
pub fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(ListVisitor(PhantomData))
}

/// Takes a string and reads it as the name of a unit variant of `T`; anything else
/// is refused as "invalid type: ..., expected a string".
struct NameVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for NameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<T, E> {
        // `T`'s own error: "unknown variant `x`, expected one of ...".
        T::deserialize(StrDeserializer::<E>::new(name))
    }
}

/// A unit-only enum field: a JSON string naming the variant, only.
pub fn name<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_str(NameVisitor(PhantomData))
}

/// `null` as `None`, else a JSON string naming the variant.
struct NameOptionVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for NameOptionVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        name(d).map(Some)
    }
}

/// An optional unit-only enum field: `null` (or, with `#[serde(default)]`, absent)
/// is `None`, anything else must be a JSON string naming the variant.
pub fn name_opt<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    d.deserialize_option(NameOptionVisitor(PhantomData))
}

/// A non-negative whole number: a JSON integer, or a number with no fraction (`7.0`),
/// which JSON Schema's `integer` also counts; too big for `T`, negative or fractional
/// is refused.
struct WholeVisitor<T>(PhantomData<T>);

impl<T: TryFrom<u64>> Visitor<'_> for WholeVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative whole number")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        let unsigned = u64::try_from(v)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))?;
        self.visit_u64(unsigned)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<T, E> {
        // serde_json's quick float parsing may land one step off a large whole number
        // (`1877353911201699.0` reads as `…699.25`): from 10^15 on, within two steps
        // counts as it. Smaller numbers parse exactly, so there only a whole value is
        // (`2.5e-42` is not 0).
        let whole = v.round();
        let tolerance = if whole.abs() >= 1e15 {
            2.0 * f64::EPSILON * whole.abs()
        } else {
            0.0
        };
        let near = (v - whole).abs() <= tolerance;
        if near && (0.0..9_007_199_254_740_992.0).contains(&whole) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            return self.visit_u64(whole as u64);
        }
        Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
    }
}

/// An integer field as JSON Schema reads `integer`: `7` or `7.0`.
pub fn whole<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(WholeVisitor(PhantomData))
}

/// An optional [`whole`] field: `null` (or absent, with `#[serde(default)]`) is `None`.
pub fn whole_opt<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    struct Opt<T>(PhantomData<T>);
    impl<'de, T: TryFrom<u64>> Visitor<'de> for Opt<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative whole number or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
            whole(d).map(Some)
        }
    }
    d.deserialize_option(Opt(PhantomData))
}

/// An optional field that may be left out but never `null` (with `#[serde(default)]`):
/// its schema has no `null`, and leaving it out is how to say "none".
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Counted {
        #[serde(deserialize_with = "super::whole")]
        n: u32,
        #[serde(default, deserialize_with = "super::whole_opt")]
        m: Option<u64>,
    }

    #[test]
    fn whole_numbers_may_be_written_as_floats_with_no_fraction() {
        let read = |v| serde_json::from_value::<Counted>(v);
        assert_eq!(
            read(json!({"n": 7.0, "m": 1877353911201699.0})).unwrap_or_else(|e| panic!("{e}")),
            Counted {
                n: 7,
                m: Some(1_877_353_911_201_699)
            }
        );
        assert_eq!(
            read(json!({"n": 3, "m": null})).unwrap_or_else(|e| panic!("{e}")),
            Counted { n: 3, m: None }
        );
        // As text, the way a client sends it (schemathesis did, and got a 400).
        let text: Counted = serde_json::from_str(r#"{"n": 1.0, "m": 1877353911201699.0}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text.m, Some(1_877_353_911_201_699));
        // A tiny fraction is a fraction, not 0 (schemathesis sent 2.589e-42).
        assert!(serde_json::from_str::<Counted>(r#"{"n": 2.5890419884777833e-42}"#).is_err());
        assert!(serde_json::from_str::<Counted>(r#"{"n": 7.000000000000001}"#).is_err());
        for bad in [
            json!({"n": 7.5}),
            json!({"n": -1}),
            json!({"n": 4294967296_u64}),
            json!({"n": "7"}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        #[serde(default)]
        a: Option<u32>,
        #[serde(default)]
        b: Option<u32>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    enum Mode {
        Plain,
        BypassAll,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        #[serde(default, deserialize_with = "super::object_opt")]
        maybe: Option<Inner>,
        #[serde(deserialize_with = "super::object")]
        must: Inner,
        #[serde(default, deserialize_with = "super::objects")]
        many: Vec<Inner>,
        #[serde(default, deserialize_with = "super::name_opt")]
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Named {
        #[serde(deserialize_with = "super::name")]
        mode: Mode,
    }

    #[test]
    fn objects_and_names_are_read_and_other_shapes_refused() {
        let ok: Outer = serde_json::from_value(json!({
            "maybe": {"a": 1}, "must": {"b": 2}, "many": [{"a": 3}, {}], "mode": "bypassAll"
        }))
        .unwrap();
        assert_eq!(
            ok.maybe,
            Some(Inner {
                a: Some(1),
                b: None
            })
        );
        assert_eq!(
            ok.must,
            Inner {
                a: None,
                b: Some(2)
            }
        );
        assert_eq!(ok.many.len(), 2);
        assert_eq!(ok.mode, Some(Mode::BypassAll));
        let absent: Outer =
            serde_json::from_value(json!({"maybe": null, "must": {}, "mode": null})).unwrap();
        assert_eq!(
            (absent.maybe, absent.many.len(), absent.mode),
            (None, 0, None)
        );
        let none: Outer = serde_json::from_str(r#"{"must": {}}"#).unwrap();
        assert_eq!((none.maybe, none.mode), (None, None));
        let named: Named = serde_json::from_str(r#"{"mode": "plain"}"#).unwrap();
        assert_eq!(named.mode, Mode::Plain);
        for bad in [
            json!({"maybe": [null, null], "must": {}}),
            json!({"maybe": [1], "must": {}}),
            json!({"maybe": 1, "must": {}}),
            json!({"must": [1, 2]}),
            json!({"must": null}),
            json!({"must": {}, "many": [[1, 2]]}),
            json!({"must": {}, "many": {"a": 1}}),
            json!({"must": {}, "mode": {"plain": null}}),
            json!({"must": {}, "mode": ["plain"]}),
            json!({"must": {}, "mode": "nope"}),
        ] {
            let err = serde_json::from_value::<Outer>(bad.clone()).unwrap_err();
            assert!(
                err.to_string().contains("expected") || err.to_string().contains("variant"),
                "{bad}: {err}"
            );
        }
        assert!(serde_json::from_value::<Named>(json!({"mode": {"plain": null}})).is_err());
        // The same from text, as the WebSocket parser reads frames.
        assert!(serde_json::from_str::<Outer>(r#"{"maybe": [null, null], "must": {}}"#).is_err());
        assert!(serde_json::from_str::<Named>(r#"{"mode": {"plain": null}}"#).is_err());
    }
}

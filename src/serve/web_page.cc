// The chat page: one self-contained document (no external asset). It posts the conversation to
// /v1/chat/completions with stream: true and stream_options.include_usage, reads the SSE stream
// with fetch's reader (events may be split across reads, or several in one), shows time to first
// token and tokens/s while the answer streams (exact counts from the usage chunk at the end), and
// aborts the fetch on Stop: the server sees the closed connection and frees the slot. Errors (an
// HTTP error object, an error event inside the stream, a dropped connection) are shown in the
// conversation. The model picker lists /v1/models and names the chosen model in each request; the
// JSON switch asks for response_format json_object (the grammar engine keeps the answer a JSON
// object); the API key field (for `spore serve --api-key`; kept in sessionStorage, sent as
// "Authorization: Bearer") reloads the model list when it changes. The page itself is served
// without the key. tests/serve/chat_page_browser_test.py drives it in headless Chromium.
#include "serve/web_page.h"

namespace spore::serve {

const char* chat_page_html() {
  return R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>spore chat</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:0;background:#f5f5f2;color:#222}
main{max-width:46rem;margin:0 auto;padding:1rem;display:flex;flex-direction:column;height:100vh;box-sizing:border-box}
#log{flex:1;overflow-y:auto}
.msg{margin:.5rem 0;padding:.6rem .8rem;border-radius:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}
.msg::before{display:block;font-size:.7rem;color:#888;margin-bottom:.2rem}
.user{background:#dde8f5}.user::before{content:'you'}
.assistant{background:#fff;border:1px solid #ddd}.assistant::before{content:'model'}
.error{background:#f8d7d7;color:#700}.error::before{content:'error'}
#figures{font-size:.8rem;color:#555;min-height:1.2em;margin:.3rem 0}
#settings{font-size:.8rem;color:#555;margin:.3rem 0}#settings input{width:4.5rem}#settings #api_key{width:9rem}
#settings #json_mode{width:auto}h3 select{font:inherit;font-size:.8rem}
form{display:flex;gap:.5rem}textarea{flex:1;font:inherit;padding:.5rem}button{font:inherit;padding:.5rem 1rem}
</style></head><body><main>
<h3>spore chat <select id="model" title="model"></select></h3>
<div id="log"></div>
<div id="figures"></div>
<div id="settings"><label>max tokens <input id="max_tokens" type="number" min="1" value="512"></label>
<label>temperature <input id="temperature" type="number" min="0" max="2" step="0.1" value="0.7"></label>
<label title="answer with a JSON object (response_format json_object)"><input id="json_mode" type="checkbox"> JSON</label>
<label>API key <input id="api_key" type="password" autocomplete="off" placeholder="if the server needs one"></label>
<button id="clear" type="button">New chat</button></div>
<form id="form"><textarea id="input" rows="2" placeholder="Say something (Enter sends, Shift+Enter: new line)"></textarea>
<button id="send" type="submit">Send</button><button id="stop" type="button" disabled>Stop</button></form>
</main><script>
'use strict';
const $=id=>document.getElementById(id);
const log=$('log'),input=$('input'),figures=$('figures'),sendBtn=$('send'),stopBtn=$('stop');
let messages=[],controller=null;
const keyInput=$('api_key'),modelPick=$('model');
keyInput.value=sessionStorage.getItem('spore_api_key')||'';
function headers(){const h={'Content-Type':'application/json'};const k=keyInput.value.trim();if(k)h.Authorization='Bearer '+k;return h;}
async function loadModels(){
  modelPick.textContent='';modelPick.dataset.state='loading';
  try{const r=await fetch('/v1/models',{headers:headers()});
    if(r.status===401){figures.textContent='This server needs an API key: enter it above.';modelPick.dataset.state='needs_key';return;}
    if(!r.ok)throw new Error(await errorText(r));
    for(const m of (await r.json()).data||[]){const o=document.createElement('option');o.value=o.textContent=m.id;modelPick.appendChild(o);}
    modelPick.dataset.state='loaded';if(!controller&&!figures.dataset.state)figures.textContent='';
  }catch(err){figures.textContent='Cannot list the models: '+(err.message||err);modelPick.dataset.state='error';}
}
keyInput.addEventListener('change',()=>{sessionStorage.setItem('spore_api_key',keyInput.value.trim());loadModels();});
loadModels();
function add(role,text){const d=document.createElement('div');d.className='msg '+role;d.textContent=text;log.appendChild(d);log.scrollTop=log.scrollHeight;return d;}
// The server's error object, or the HTTP status when the body is not one.
async function errorText(r){const t=await r.text();try{const j=JSON.parse(t);if(j.error&&j.error.message)return j.error.message+' ('+r.status+')';}catch(e){}return 'HTTP '+r.status+(t?': '+t.slice(0,200):'');}
function show(f){
  const parts=['first token '+(f.first===null?'-':f.first.toFixed(0)+' ms')];
  if(f.n>1&&f.decodeMs>0)parts.push(((f.n-1)*1000/f.decodeMs).toFixed(1)+' tokens/s');
  parts.push(f.n+' tokens');if(f.cached)parts.push(f.cached+' prompt tokens cached');if(f.state)parts.push(f.state);
  figures.textContent=parts.join(', ');figures.dataset.state=f.state||'';
}
stopBtn.onclick=()=>{if(controller)controller.abort();};
$('clear').onclick=()=>{if(controller)controller.abort();messages=[];log.textContent='';figures.textContent='';};
input.addEventListener('keydown',e=>{if(e.key==='Enter'&&!e.shiftKey){e.preventDefault();$('form').requestSubmit();}});
$('form').onsubmit=async e=>{
  e.preventDefault();const text=input.value.trim();if(!text||controller)return;
  input.value='';add('user',text);messages.push({role:'user',content:text});
  const out=add('assistant','');controller=new AbortController();sendBtn.disabled=true;stopBtn.disabled=false;
  const t0=performance.now(),f={first:null,n:0,decodeMs:0,cached:0,state:'streaming'};let answer='';show(f);
  const body={messages,stream:true,stream_options:{include_usage:true}};
  const mt=parseInt($('max_tokens').value,10),temp=parseFloat($('temperature').value);
  if(mt>0)body.max_tokens=mt;if(temp>=0)body.temperature=temp;
  if(modelPick.value)body.model=modelPick.value;if($('json_mode').checked)body.response_format={type:'json_object'};
  try{
    const r=await fetch('/v1/chat/completions',{method:'POST',headers:headers(),signal:controller.signal,body:JSON.stringify(body)});
    if(!r.ok)throw new Error(await errorText(r));
    const reader=r.body.getReader(),dec=new TextDecoder();let buf='',finished=false;
    for(;;){const {done,value}=await reader.read();if(done)break;buf+=dec.decode(value,{stream:true});
      let i;while((i=buf.indexOf('\n\n'))>=0){const ev=buf.slice(0,i);buf=buf.slice(i+2);
        if(!ev.startsWith('data: '))continue;const data=ev.slice(6);if(data==='[DONE]'){finished=true;continue;}
        const j=JSON.parse(data);if(j.error)throw new Error(j.error.message);
        if(j.usage){f.n=j.usage.completion_tokens;const d=j.usage.prompt_tokens_details;if(d)f.cached=d.cached_tokens||0;}
        const c=j.choices&&j.choices[0];
        if(c&&c.delta&&c.delta.content){const now=performance.now()-t0;if(f.first===null)f.first=now;else f.decodeMs=now-f.first;
          f.n++;answer+=c.delta.content;out.textContent=answer;log.scrollTop=log.scrollHeight;}}
      show(f);}
    if(!finished)throw new Error('the connection closed before the answer was complete');
    f.state='done';messages.push({role:'assistant',content:answer});
  }catch(err){
    if(err.name==='AbortError'){f.state='stopped';messages.push({role:'assistant',content:answer});}
    else{f.state='error';if(!answer)out.remove();add('error',String(err.message||err));messages.pop();}
  }finally{show(f);controller=null;sendBtn.disabled=false;stopBtn.disabled=true;input.focus();}
};
</script></body></html>
)HTML";
}

}  // namespace spore::serve
